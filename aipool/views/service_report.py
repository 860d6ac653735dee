"""Each producing service's use of the pool, as ``aipool status --by service``, ``aipool report
--by service``, the usage endpoint and the daily report show it.

One reading (:func:`read_services`) of the ledger's rows for a local day and its month to date
(:mod:`aipool.ledger.services`), set beside what the route table declares of each service: its
display name, its monthly budget (how much of it the month has used) and its shares of providers'
daily limits (how much of each the day has used). Every declared service has a line, used or not,
and so does ``other`` (requests naming no declared service); a name the rows hold that the table
no longer declares keeps its own line, so the lines always add up to the pool's totals.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, tzinfo
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine

from aipool.contract.route import OTHER_SERVICE
from aipool.ledger.services import ServiceUsage, service_usage_day, service_usage_month_to
from aipool.routing.table import SHARE_KEYS, RouteTable, Service
from aipool.settings.provider_limits import ProviderLimits


@dataclass(frozen=True)
class ShareUse:
    """A service's use of its share of one provider's daily limit."""

    provider: str
    #: ``daily_tokens`` or ``daily_requests``.
    limit: str
    used: int
    allowed: int

    @property
    def used_fraction(self) -> float:
        """The fraction of the share used (1.0: all of it)."""
        return self.used / self.allowed if self.allowed else 0.0


@dataclass(frozen=True)
class ServiceLine:
    """One service over a period (a day, or a month to date)."""

    service: str
    name: str
    usage: ServiceUsage
    #: The month's cost so far (to the end of the report's day): what its budget counts.
    month_cost_usd: Decimal
    budget_usd: Decimal | None
    #: Its shares of providers' daily limits, used on the report's day.
    shares: tuple[ShareUse, ...] = ()

    @property
    def budget_used(self) -> float | None:
        """The fraction of its monthly budget used, ``None`` without a budget."""
        if self.budget_usd is None:
            return None
        return float(self.month_cost_usd / self.budget_usd)

    def to_json(self) -> dict[str, Any]:
        u = self.usage
        return {
            "service": self.service,
            "name": self.name,
            "requests": u.requests,
            "calls": u.calls,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "tokens": u.tokens,
            "cost_usd": str(u.cost_usd),
            "cached": u.cached,
            "saved_usd": str(u.saved_usd),
            "month_cost_usd": str(self.month_cost_usd),
            "budget_usd": None if self.budget_usd is None else str(self.budget_usd),
            "budget_used": None if self.budget_used is None else round(self.budget_used, 6),
            "shares": [
                {
                    "provider": s.provider,
                    "limit": s.limit,
                    "used": s.used,
                    "allowed": s.allowed,
                    "used_fraction": round(s.used_fraction, 6),
                }
                for s in self.shares
            ],
        }


@dataclass(frozen=True)
class ServicesReport:
    """Every service's line for the local ``day`` and for its month up to the end of ``day``."""

    day: date
    day_lines: tuple[ServiceLine, ...]
    month_lines: tuple[ServiceLine, ...]

    def to_json(self) -> dict[str, Any]:
        """The day's lines as JSON data (the usage endpoint's ``services`` block)."""
        return {
            "day": self.day.isoformat(),
            "month": self.day.strftime("%Y-%m"),
            "services": [line.to_json() for line in self.day_lines],
        }


def share_use(
    service: Service | None, day: ServiceUsage, limits: Mapping[str, ProviderLimits]
) -> tuple[ShareUse, ...]:
    """``service``'s use of each share it has of a provider's daily limit, on the day ``day``
    counts; a share of a limit the provider does not have is left out (nothing to share)."""
    if service is None:
        return ()
    uses = []
    for provider, shares in service.shares.items():
        quota = limits[provider].quota if provider in limits else None
        for limit in SHARE_KEYS:
            fraction = shares.get(limit)
            whole = getattr(quota, limit, None) if quota is not None else None
            if fraction is None or not whole:
                continue
            spent = day.of(provider)
            used = spent.tokens if limit == "daily_tokens" else spent.calls
            # The admission script allows int(fraction * limit) (aipool.attempt.money).
            uses.append(ShareUse(provider, limit, used, int(fraction * whole)))
    return tuple(uses)


def _names(table: RouteTable, *seen: Mapping[str, ServiceUsage]) -> list[str]:
    """Declared services in the table's order, then other names the rows hold, ``other`` last."""
    declared = list(table.services)
    extra = sorted({n for rows in seen for n in rows} - set(declared) - {OTHER_SERVICE})
    return [*declared, *extra, OTHER_SERVICE]


def read_services(
    engine: Engine,
    day: date,
    zone: tzinfo,
    table: RouteTable,
    limits: Mapping[str, ProviderLimits],
) -> ServicesReport:
    """Every service's use of the local ``day`` and of its month up to the end of ``day``."""
    today = service_usage_day(engine, day, zone)
    month = service_usage_month_to(engine, day, zone)
    day_lines, month_lines = [], []
    for key in _names(table, today, month):
        declared = table.services.get(key)
        name = declared.name if declared is not None else key
        budget = declared.monthly_budget_usd if declared is not None else None
        used_today = today.get(key, ServiceUsage(key))
        month_cost = month.get(key, ServiceUsage(key)).cost_usd
        shares = share_use(declared, used_today, limits)
        day_lines.append(ServiceLine(key, name, used_today, month_cost, budget, shares))
        # Shares are of a day's limits: the month's line has none to show.
        month_lines.append(
            ServiceLine(key, name, month.get(key, ServiceUsage(key)), month_cost, budget)
        )
    return ServicesReport(day, tuple(day_lines), tuple(month_lines))
