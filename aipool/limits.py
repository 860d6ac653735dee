"""Compatibility: breaker and quota settings moved to :mod:`aipool.settings.provider_limits`, and
the values in force are ``aipool.settings.settings().limits``. Kept while ``aipool/pool_state.py``
and ``bench/bench_guards.py`` import from here."""

from __future__ import annotations

from aipool.settings import settings
from aipool.settings.provider_limits import ADR_LIMITS as DEFAULTS
from aipool.settings.provider_limits import BreakerSettings, ProviderLimits, QuotaLimits

__all__ = ["DEFAULTS", "BreakerSettings", "ProviderLimits", "QuotaLimits", "load_limits"]


def load_limits() -> dict[str, ProviderLimits]:
    """The limits in force for every provider (``settings().limits``)."""
    return settings().limits
