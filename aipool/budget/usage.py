"""What each provider has used of its calendar budgets, read from the ledger.

One function feeds both alerting paths: the pool's own budget checks (beat) and the gauges the
maintenance worker exports to Prometheus. Both therefore see the same numbers, to the token, and
both are :func:`aipool.ledger.spend.spend`: the sum of the period's raw rows at the instant of
reading, late rows of any closed day included, whenever the roll-up last ran.

Periods are the calendar day and month in ``AIPOOL_TIMEZONE`` (ADR-006), as for the quotas; a call
counts in the day it started. Requests count calls that reached the provider (outcomes ok and
error), as the quotas count them. Records still waiting in Redis are not included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from decimal import Decimal

from sqlalchemy import Engine

from aipool.ledger.spend import Spend, month_spend
from aipool.periods import local_day
from aipool.providers.catalog import PROVIDERS

#: The calendar quotas a budget alert watches (``aipool.settings.provider_limits.QuotaLimits`` field names).
CALENDAR_QUOTAS = ("daily_tokens", "daily_requests", "monthly_tokens")


@dataclass(frozen=True)
class ProviderUsage:
    """One provider's use of the current local day and month."""

    day_requests: int = 0
    day_tokens: int = 0
    month_tokens: int = 0
    day_cost: Decimal = Decimal(0)
    month_cost: Decimal = Decimal(0)

    def used(self, quota: str) -> int:
        """What counts against ``quota`` (one of :data:`CALENDAR_QUOTAS`)."""
        return {
            "daily_tokens": self.day_tokens,
            "daily_requests": self.day_requests,
            "monthly_tokens": self.month_tokens,
        }[quota]


@dataclass(frozen=True)
class BudgetUsage:
    """Every provider's :class:`ProviderUsage` for the local ``day`` and its month."""

    day: date
    providers: dict[str, ProviderUsage] = field(default_factory=dict)

    def of(self, provider: str) -> ProviderUsage:
        """``provider``'s usage; zero for a provider with no row in the periods."""
        return self.providers.get(provider, ProviderUsage())

    @property
    def month_cost(self) -> Decimal:
        """The month's cost so far, all providers together."""
        return sum((u.month_cost for u in self.providers.values()), Decimal(0))


def budget_usage(
    engine: Engine, now: datetime, zone: tzinfo, providers: Iterable[str] = PROVIDERS
) -> BudgetUsage:
    """Usage of the local day and month holding ``now``, per provider (every one in ``providers``)."""
    today = local_day(now, zone)
    figures = month_spend(engine, today, zone)
    result = {}
    for provider in dict.fromkeys([*providers, *figures.period]):
        month = figures.period.get(provider, Spend())
        day = figures.day.get(provider, Spend())
        result[provider] = ProviderUsage(
            day_requests=day.calls,
            day_tokens=day.tokens,
            month_tokens=month.tokens,
            day_cost=day.cost_usd,
            month_cost=month.cost_usd,
        )
    return BudgetUsage(today, result)
