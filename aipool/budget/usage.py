"""What each provider has used of its calendar budgets, read from the ledger.

One function feeds both alerting paths: the pool's own budget checks (beat) and the gauges the
maintenance worker exports to Prometheus. Both therefore see the same numbers, to the token.

Periods are the calendar day and month in ``AIPOOL_TIMEZONE`` (ADR-006), as for the quotas.
Today's figures come from today's raw rows; the month adds the closed days of the daily roll-up,
so the month's raw rows are never rescanned. Requests count calls that reached the provider
(outcomes ok and error), as the quotas count them. Records still waiting in Redis are not included.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from decimal import Decimal

from sqlalchemy import Engine, case, func, select

from aipool.chains import PROVIDERS
from aipool.ledger.models import DailyUsage, UsageLogRow
from aipool.ledger.record import CALLED_OUTCOMES
from aipool.periods import day_range, local_day, month_start

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
    t, d = UsageLogRow, DailyUsage
    today = local_day(now, zone)
    start, end = day_range(today, zone)
    called = case((t.outcome.in_(CALLED_OUTCOMES), 1), else_=0)
    with engine.connect() as conn:
        day_rows = conn.execute(
            select(
                t.provider,
                func.coalesce(func.sum(called), 0),
                func.coalesce(func.sum(t.input_tokens + t.output_tokens), 0),
                func.coalesce(func.sum(t.cost_usd), 0),
            )
            .where(t.created_at >= start, t.created_at < end)
            .group_by(t.provider)
        ).all()
        earlier_rows = conn.execute(
            select(
                d.provider,
                func.coalesce(func.sum(d.input_tokens + d.output_tokens), 0),
                func.coalesce(func.sum(d.cost_usd), 0),
            )
            .where(d.day >= month_start(today), d.day < today)
            .group_by(d.provider)
        ).all()
    day = {p: (int(r), int(tok), Decimal(c)) for p, r, tok, c in day_rows}
    earlier = {p: (int(tok), Decimal(c)) for p, tok, c in earlier_rows}
    result = {}
    for provider in dict.fromkeys([*providers, *day, *earlier]):
        requests, tokens, cost = day.get(provider, (0, 0, Decimal(0)))
        before_tokens, before_cost = earlier.get(provider, (0, Decimal(0)))
        result[provider] = ProviderUsage(
            day_requests=requests,
            day_tokens=tokens,
            month_tokens=before_tokens + tokens,
            day_cost=cost,
            month_cost=before_cost + cost,
        )
    return BudgetUsage(today, result)
