"""Breaker and quota settings per provider, and ADR-006's numbers for them.

These are settings, not a limiter: :mod:`aipool.breaker` and :mod:`aipool.quota` enforce them.
:mod:`aipool.settings` fills them from the limits file (``AIPOOL_LIMITS_FILE``) and from
``AIPOOL_<PROVIDER>_<NAME>`` variables, e.g. ``AIPOOL_GEMINI_RPM=20``. Example file::

    [gemini]
    rpm = 10
    daily_requests = 500
    daily_tokens = 100_000
    monthly_tokens = "unlimited"
    failure_threshold = 5
    recovery_timeout = 60

A quota limit is a positive whole number or ``unlimited`` (``None`` in code). ``0`` is refused:
it once meant "no limit", so a mistyped limit silently became none.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Annotated, Any

from pydantic import AllowInfNan, BeforeValidator, ConfigDict, Field, PositiveInt

from aipool.providers.catalog import CATALOG

#: How an operator says a limit has no limit (``none`` is read the same way).
UNLIMITED = "unlimited"
NO_LIMIT_WORDS = (UNLIMITED, "none")


def no_limit_word(value: Any) -> bool:
    """Whether ``value`` is one of the words that say "no limit"."""
    return isinstance(value, str) and value.strip().lower() in NO_LIMIT_WORDS


def _quota_limit(value: Any) -> int | None:
    """A positive whole number, or ``None`` for ``unlimited``; anything else is refused."""
    if value is None or no_limit_word(value):
        return None
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        if not text.isdigit():
            raise ValueError(f"must be a positive whole number or {UNLIMITED!r}")
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a positive whole number or {UNLIMITED!r}")
    if value == 0:
        raise ValueError(f"0 no longer means no limit: write {UNLIMITED!r} for no limit")
    if value < 0:
        raise ValueError(f"must be a positive whole number or {UNLIMITED!r}")
    return value


#: A length of time in seconds: positive and finite. ``inf`` is not "no limit" (a breaker that
#: never probes again, a call no timeout ends) and ``nan`` compares false with everything.
Seconds = Annotated[float, AllowInfNan(False), Field(gt=0)]

#: A quota limit as data: a positive whole number, or ``None`` (written ``unlimited``).
QuotaLimit = Annotated[int | None, BeforeValidator(_quota_limit)]


@dataclass(frozen=True)
class BreakerSettings:
    """When a provider's breaker opens and how it probes recovery (ADR-006 §2)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    failure_threshold: PositiveInt = 5
    recovery_timeout: Seconds = 60.0
    half_open_max_calls: PositiveInt = 3


@dataclass(frozen=True)
class QuotaLimits:
    """How much a provider may be used (ADR-006 §3, §7); ``None`` means unlimited."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    rpm: QuotaLimit = None
    daily_requests: QuotaLimit = None
    daily_tokens: QuotaLimit = None
    monthly_tokens: QuotaLimit = None

    @property
    def unlimited(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


@dataclass(frozen=True)
class ProviderLimits:
    """A provider's breaker settings and quota limits."""

    breaker: BreakerSettings
    quota: QuotaLimits


BREAKER_KEYS = tuple(f.name for f in fields(BreakerSettings))
QUOTA_KEYS = tuple(f.name for f in fields(QuotaLimits))
#: Every key a provider's section of the limits file (or its variables) may set.
LIMIT_KEYS = BREAKER_KEYS + QUOTA_KEYS

#: ADR-006's numbers: the defaults, and the bar below which a configured quota is logged.
ADR_LIMITS: dict[str, ProviderLimits] = {
    name: ProviderLimits(
        BreakerSettings(**asdict(facts.breaker)), QuotaLimits(**asdict(facts.quota))
    )
    for name, facts in CATALOG.items()
}


def below_adr(provider: str, quota: QuotaLimits) -> list[tuple[str, int, int]]:
    """``(name, configured, ADR's)`` for each of ``provider``'s quota limits set below ADR-006's."""
    adr = ADR_LIMITS[provider].quota
    lower = []
    for name in QUOTA_KEYS:
        configured, allowed = getattr(quota, name), getattr(adr, name)
        if configured is not None and allowed is not None and configured < allowed:
            lower.append((name, configured, allowed))
    return lower
