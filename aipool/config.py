"""What the provider adapters are pointed at, read from :mod:`aipool.settings`.

:class:`ProviderEndpoint` is what an adapter builds its SDK client from. The functions below it
are the earlier names of settings, kept for the modules that still call them (``aipool/hop.py``:
``log_prompts``; ``aipool/pool_state.py``: ``timezone``; the static and refusal answers); new code
asks :func:`aipool.settings.settings` directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from zoneinfo import ZoneInfo

from aipool.periods import pool_zone
from aipool.settings import settings
from aipool.settings.model import DEFAULT_TIMEZONE, REFUSAL_DEFAULT, STATIC_ANSWER_DEFAULT

__all__ = [
    "DEFAULT_TIMEZONE",
    "REFUSAL_DEFAULT",
    "STATIC_ANSWER_DEFAULT",
    "ProviderEndpoint",
    "base_url",
    "log_prompts",
    "refusal_message",
    "static_answer",
    "timeout_s",
    "timezone",
]


def base_url(provider: str) -> str:
    """The base URL the provider's SDK is pointed at."""
    return settings().providers[provider].base_url


def timeout_s(provider: str) -> float:
    """Per-call timeout for ``provider`` (``AIPOOL_TIMEOUT_<PROVIDER>``, seconds)."""
    return settings().providers[provider].timeout_s


def static_answer() -> str:
    return settings().static_answer


def refusal_message() -> str:
    return settings().refusal_message


def timezone(name: str | None = None) -> ZoneInfo:
    """The pool's calendar zone: :func:`aipool.periods.pool_zone`."""
    return pool_zone(name)


def log_prompts() -> bool:
    """Prompt text is kept out of logs unless an operator turns this on for debugging."""
    return settings().log_prompts


@dataclass(frozen=True)
class ProviderEndpoint:
    """Everything an adapter needs to build its SDK client (the key is read, never stored here)."""

    provider: str
    base_url: str
    timeout_s: float

    @classmethod
    def for_provider(cls, provider: str) -> ProviderEndpoint:
        return cls(provider=provider, base_url=base_url(provider), timeout_s=timeout_s(provider))
