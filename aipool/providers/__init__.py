"""Model providers: one adapter module each, one :class:`~aipool.providers.base.Provider` interface."""

from __future__ import annotations

from functools import cache

from aipool.providers.base import Provider


@cache
def get_provider(name: str) -> Provider:
    """The process-wide adapter for ``name``, built once and reused (SDK clients are costly)."""
    # Imports are local so a worker serving one queue never loads the other SDKs.
    if name == "ollama":
        from aipool.providers.ollama import OllamaProvider

        return OllamaProvider()
    if name == "gemini":
        from aipool.providers.gemini import GeminiProvider

        return GeminiProvider()
    if name == "claude":
        from aipool.providers.claude import ClaudeProvider

        return ClaudeProvider()
    if name == "nemotron":
        from aipool.providers.nemotron import NemotronProvider

        return NemotronProvider()
    if name in ("static", "refuse"):
        from aipool.providers.static import StaticProvider

        return StaticProvider(refuse=name == "refuse")
    raise KeyError(f"unknown provider {name!r}")


__all__ = ["Provider", "get_provider"]
