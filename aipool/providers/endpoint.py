"""What the provider adapters are pointed at, read from :mod:`aipool.settings`.

:class:`ProviderEndpoint` is what an adapter builds its SDK client from.
"""

from __future__ import annotations

from dataclasses import dataclass

from aipool.settings import settings

__all__ = ["ProviderEndpoint", "base_url", "timeout_s"]


def base_url(provider: str) -> str:
    """The base URL the provider's SDK is pointed at."""
    return settings().providers[provider].base_url


def timeout_s(provider: str) -> float:
    """Per-call timeout for ``provider`` (``AIPOOL_TIMEOUT_<PROVIDER>``, seconds)."""
    return settings().providers[provider].timeout_s


@dataclass(frozen=True)
class ProviderEndpoint:
    """Everything an adapter needs to build its SDK client (the key is read, never stored here)."""

    provider: str
    base_url: str
    timeout_s: float

    @classmethod
    def for_provider(cls, provider: str) -> ProviderEndpoint:
        return cls(provider=provider, base_url=base_url(provider), timeout_s=timeout_s(provider))
