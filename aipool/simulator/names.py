"""Provider names: the simulator's server kinds, the pool's spellings, default ports and env vars.

The simulator speaks four wire protocols (``ollama``, ``gemini``, ``anthropic``, ``openai``); the pool
names its providers ``ollama``, ``gemini``, ``claude`` and ``nemotron``. Both spellings are accepted
wherever a provider is named, and :func:`server_kind` turns either into the server kind.
"""

from __future__ import annotations

SERVER_KINDS: tuple[str, ...] = ("ollama", "gemini", "anthropic", "openai")

#: The pool's provider name for each server kind.
POOL_NAMES: dict[str, str] = {
    "ollama": "ollama",
    "gemini": "gemini",
    "anthropic": "claude",
    "openai": "nemotron",
}

_ALIASES: dict[str, str] = {
    **{kind: kind for kind in SERVER_KINDS},
    "claude": "anthropic",
    "nemotron": "openai",
    "nvidia": "openai",
}

#: Fixed ports for ``aipool simulate``: next to, never on, a real local Ollama's 11434.
DEFAULT_PORTS: dict[str, int] = {
    "ollama": 18434,
    "gemini": 18435,
    "anthropic": 18436,
    "openai": 18437,
}
DEFAULT_ADMIN_PORT = 18430

#: The environment variable through which the pool learns each server's base URL.
BASE_URL_ENV: dict[str, str] = {
    "ollama": "OLLAMA_BASE_URL",
    "gemini": "GEMINI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "NVIDIA_BASE_URL",
}
ADMIN_URL_ENV = "AIPOOL_SIMULATOR_ADMIN_URL"


class UnknownProvider(ValueError):
    """Raised for a provider name that is neither a server kind nor a pool provider name."""


def server_kind(provider: str) -> str:
    """Return the server kind for ``provider`` (``claude`` -> ``anthropic``, ``nemotron`` -> ``openai``)."""
    try:
        return _ALIASES[provider.strip().lower()]
    except KeyError:
        known = ", ".join(sorted(_ALIASES))
        raise UnknownProvider(f"unknown provider {provider!r}; known: {known}") from None
