"""Usage totals read back from the ledger, used to rebuild quota counters after Redis lost them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, tzinfo
from typing import Protocol

from sqlalchemy import Engine

from aipool.ledger.spend import Spend, month_spend, spend
from aipool.periods import local_day, pool_zone


class Restorable(Protocol):
    """Anything with the quota's restore method (``aipool.quota.Quota`` has it)."""

    def restore(self, day_requests: int, day_tokens: int, month_tokens: int) -> object:
        """Set the counters of the current day and month."""
        ...


def totals(
    engine: Engine, provider: str, day: date, month: date, tz: tzinfo | str | None = None
) -> tuple[int, int, int]:
    """``(day_requests, day_tokens, month_tokens)`` of ``provider``, as the budget checks see them.

    ``day`` and ``month`` are local calendar periods in ``tz`` (``month`` is any date in that
    month); a call counts in the day it started, as the quota booked its reservation. Requests
    count attempts that reached the provider (outcomes ok, error): a hop skipped for an open
    breaker, a spent quota or a passed deadline used none of it. Tokens are input plus output.
    The figures are :func:`aipool.ledger.spend.spend`'s (late rows included, whenever the roll-up
    ran). Records still waiting in Redis are not included.
    """
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    of_day = spend(engine, day, day, zone).period.get(provider, Spend())
    of_month = month_spend(engine, month, zone).period.get(provider, Spend())
    return of_day.calls, of_day.tokens, of_month.tokens


def restore_quotas(
    engine: Engine,
    quotas: Mapping[str, Restorable],
    now: datetime,
    tz: tzinfo | str | None = None,
) -> dict[str, tuple[int, int, int]]:
    """Call ``quota.restore(day_requests, day_tokens, month_tokens)`` for every provider.

    The totals are those of the local day and month containing ``now``. Returns what each
    provider was given, for logging.
    """
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    figures = month_spend(engine, local_day(now, zone), zone)  # one read for every provider
    given = {}
    for provider, quota in quotas.items():
        day = figures.day.get(provider, Spend())
        counts = (day.calls, day.tokens, figures.period.get(provider, Spend()).tokens)
        quota.restore(*counts)
        given[provider] = counts
    return given
