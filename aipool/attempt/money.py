"""The money rules a call is admitted by: the pool's cap on paid spend, each service's budget and
share of a provider's day, and the saving mode that keeps low-priority work off paid hops once a
day's quota or the month's budget runs low.

They ride in the attempt's own script (one round trip, atomic with the quota), which reads the
amounts from the stored hop configuration (:mod:`aipool.attempt.hop_config`): Redis keeps a
month's spend per service (``aipool:spend:{month}``, micro-dollars, charged at the estimate when a
call begins and settled to its cost when it ends) and each service's use of a provider's day
beside that day's counters. These are admission figures; the ledger is the account, and the beat
restores them from it after Redis lost them (:mod:`aipool.ledger.totals`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aipool.attempt.layout import spend_key
from aipool.contract.request import PRIORITIES
from aipool.quota import Quota
from aipool.routing.table import RouteTable
from aipool.settings import settings

NONE = -1


def micro(usd: Decimal | float) -> int:
    """Dollars as whole micro-dollars, rounded up (an admission never under-counts)."""
    return math.ceil(Decimal(str(usd)) * 1_000_000)


@dataclass(frozen=True)
class MoneyRules:
    """The pool's money settings, as the script reads them."""

    #: What paid calls may cost the pool in a month, all services together (None: no cap).
    cap_usd: Decimal | None
    #: The monthly budget (ADR-006's $10): what the saving mode's fraction is of.
    budget_usd: Decimal
    #: From which fraction of a daily limit or of the budget low-priority work stays off paid
    #: hops (None: never).
    save_from: float | None
    #: Requests below this priority are the ones the saving mode keeps off paid hops.
    save_below: str

    @classmethod
    def from_settings(cls) -> MoneyRules:
        s = settings()
        return cls(
            cap_usd=s.cloud_spend_cap_usd,
            budget_usd=s.monthly_budget_usd,
            save_from=s.saving_threshold,
            save_below=s.saving_below_priority,
        )

    def amounts(self) -> dict[str, Any]:
        """The pool's amounts as the stored hop configuration holds them
        (:mod:`aipool.attempt.hop_config`): the ``cap`` on paid spend a month, the monthly
        ``budget`` (micro-dollars, -1 for none), the fraction from which to ``save`` (-1: never)
        and the priorities ``saving`` applies to."""
        below = PRIORITIES.index(self.save_below)
        return {
            "cap": NONE if self.cap_usd is None else micro(self.cap_usd),
            "budget": micro(self.budget_usd),
            "save": NONE if self.save_from is None else self.save_from,
            "saving": list(PRIORITIES[:below]),
        }


def service_fields(table: RouteTable, quotas: Mapping[str, Quota]) -> dict[str, Any]:
    """``svc:<service>`` of the stored hop configuration: each declared service's monthly
    ``budget`` (micro-dollars, -1 for none) and its share (``s``) of each provider's day,
    ``[tokens, requests]`` (-1 for no share of one; a provider it has no share of is absent)."""
    fields: dict[str, Any] = {}
    for key, service in table.services.items():
        shares: dict[str, list[int]] = {}
        for provider, share in service.shares.items():
            quota = quotas.get(provider)
            if quota is None:
                continue
            limits = quota.limits
            tokens, requests = (
                _share(share.get("daily_tokens"), limits.daily_tokens),
                _share(share.get("daily_requests"), limits.daily_requests),
            )
            if (tokens, requests) != (NONE, NONE):
                shares[provider] = [tokens, requests]
        budget = service.monthly_budget_usd
        fields[f"svc:{key}"] = {"budget": NONE if budget is None else micro(budget), "s": shares}
    return fields


def restore_spend(client: Any, month: str, by_service: Mapping[str, Decimal]) -> bool:
    """Give a month's spend back to Redis from the ledger when Redis lost it (the key is gone):
    the cap and the services' budgets then count what was spent before. A spend Redis still
    holds is left alone (it also holds the calls in flight, which the ledger does not). Returns
    whether anything was written."""
    key = spend_key(month)
    if client.exists(key):
        return False
    fields = {f"svc:{service}": micro(cost) for service, cost in by_service.items()}
    fields["all"] = micro(sum(by_service.values(), Decimal(0)))
    # HSETNX field by field: a call admitted meanwhile keeps its charge.
    pipe = client.pipeline(transaction=True)
    for field, value in fields.items():
        pipe.hsetnx(key, field, value)
    pipe.expire(key, 35 * 86_400 + 31 * 86_400)
    pipe.execute()
    return True


def _share(fraction: float | None, limit: int | None) -> int:
    """A service's share of a daily limit, in the limit's unit (-1: no share of it)."""
    if fraction is None or limit is None:
        return NONE
    return int(fraction * limit)
