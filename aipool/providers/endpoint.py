"""What the provider adapters are pointed at, read from :mod:`aipool.settings`.

:class:`ProviderEndpoint` is what an adapter builds its SDK client from.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from aipool.settings import settings

__all__ = ["ProviderEndpoint", "base_url", "base_url_host", "timeout_s", "url_host"]


def base_url(provider: str) -> str:
    """The base URL the provider's SDK is pointed at."""
    return settings().providers[provider].base_url


def url_host(url: str) -> str:
    """The host of ``url`` and its port when it names one (``ollama:11434``, ``[::1]:8080``),
    nothing else: a URL's user info, path and query may hold a key (a gateway's token in its
    path, ``?key=``), and an alert or log line that names where a provider is must not. ``""``
    when the URL names no host."""
    parts = urlsplit(url.strip())
    name = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    if ":" in name:
        name = f"[{name}]"
    return f"{name}:{port}" if name and port is not None else name


def base_url_host(provider: str) -> str:
    """The host (and port) of the base URL the provider's SDK is pointed at (:func:`url_host`)."""
    return url_host(base_url(provider))


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
