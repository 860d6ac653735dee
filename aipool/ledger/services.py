"""What each producing service used over a period, read from the ledger's raw rows.

Every row names the service its request was counted as (a service the route table declares, else
``other``; migration 0005). Per service: **requests** (distinct requests that had a hop in the
period), **calls** (hops that reached a provider, as the quotas count them), tokens and cost,
in total and per provider (a service's share of a provider's day is counted from the latter).
The rows are read on the ``(service, created_at)`` index, one group per (service, provider).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from decimal import Decimal

from sqlalchemy import Engine, case, func, select

from aipool.contract.vocabulary import CACHED_OUTCOMES, CALLED_OUTCOMES
from aipool.ledger.models import usage_logs
from aipool.ledger.spend import Spend
from aipool.periods import day_range, month_range


@dataclass(frozen=True)
class ServiceUsage:
    """One service's use of a period: requests, and per provider the calls, tokens and cost."""

    service: str
    requests: int = 0
    providers: dict[str, Spend] = field(default_factory=dict)
    #: Requests the response cache answered ($0 each), and what those answers had cost.
    cached: int = 0
    saved_usd: Decimal = Decimal(0)

    def of(self, provider: str) -> Spend:
        """What this service used of ``provider`` (zero when it did not reach it)."""
        return self.providers.get(provider, Spend())

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.providers.values())

    @property
    def input_tokens(self) -> int:
        return sum(s.input_tokens for s in self.providers.values())

    @property
    def output_tokens(self) -> int:
        return sum(s.output_tokens for s in self.providers.values())

    @property
    def tokens(self) -> int:
        """Input plus output tokens, as the quotas count them."""
        return self.input_tokens + self.output_tokens

    @property
    def cost_usd(self) -> Decimal:
        return sum((s.cost_usd for s in self.providers.values()), Decimal(0))


def service_usage(engine: Engine, start: datetime, end: datetime) -> dict[str, ServiceUsage]:
    """Per service named in the rows created in UTC ``[start, end)``, what it used."""
    t = usage_logs.c
    in_range = (t.created_at >= start, t.created_at < end)
    called = t.outcome.in_(CALLED_OUTCOMES)
    by_provider = (
        select(
            t.service,
            t.provider,
            func.sum(case((called, 1), else_=0)),
            func.coalesce(func.sum(t.input_tokens), 0),
            func.coalesce(func.sum(t.output_tokens), 0),
            func.coalesce(func.sum(t.cost_usd), 0),
        )
        .where(*in_range)
        .group_by(t.service, t.provider)
    )
    requests = (
        select(t.service, func.count(func.distinct(t.request_id)))
        .where(*in_range)
        .group_by(t.service)
    )
    hits = (
        select(t.service, func.count(), func.coalesce(func.sum(t.saved_usd), 0))
        .where(*in_range, t.outcome.in_(CACHED_OUTCOMES))
        .group_by(t.service)
    )
    providers: dict[str, dict[str, Spend]] = {}
    with engine.connect() as conn:
        for service, provider, calls, tokens_in, tokens_out, cost in conn.execute(by_provider):
            providers.setdefault(service, {})[provider] = Spend(
                int(calls or 0), int(tokens_in), int(tokens_out), _money(cost)
            )
        counted = {service: int(n) for service, n in conn.execute(requests)}
        saved = {service: (int(n), _money(usd)) for service, n, usd in conn.execute(hits)}
    return {
        service: ServiceUsage(
            service,
            counted.get(service, 0),
            providers.get(service, {}),
            *saved.get(service, (0, Decimal(0))),
        )
        for service in sorted(set(providers) | set(counted))
    }


def service_usage_day(engine: Engine, day: date, zone: tzinfo) -> dict[str, ServiceUsage]:
    """:func:`service_usage` over the local calendar ``day``."""
    return service_usage(engine, *day_range(day, zone))


def service_usage_month_to(engine: Engine, day: date, zone: tzinfo) -> dict[str, ServiceUsage]:
    """:func:`service_usage` from the first of ``day``'s month to the end of ``day``."""
    return service_usage(engine, month_range(day, zone)[0], day_range(day, zone)[1])


def _money(value: object) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value or 0))
