"""Usage totals read back from the ledger, used to rebuild quota counters after Redis lost them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, tzinfo
from typing import Protocol

from sqlalchemy import Engine, func, select

from aipool.ledger.models import UsageLogRow
from aipool.ledger.record import CALLED_OUTCOMES
from aipool.periods import day_range, local_day, month_range


class Restorable(Protocol):
    """Anything with the quota's restore method (``aipool.quota.Quota`` has it)."""

    def restore(self, day_requests: int, day_tokens: int, month_tokens: int) -> object:
        """Set the counters of the current day and month."""
        ...


def totals(
    engine: Engine, provider: str, day: date, month: date, tz: tzinfo | str | None = None
) -> tuple[int, int, int]:
    """``(day_requests, day_tokens, month_tokens)`` of ``provider`` from ``ai_usage_logs``.

    ``day`` and ``month`` are local calendar periods in ``tz`` (``month`` is any date in that
    month). Only attempts that reached the provider count (outcomes ok, error): a hop
    skipped for an open breaker, a spent quota or a passed deadline used none of it. Tokens are input plus output.
    Records still waiting in Redis are not included.
    """
    t = UsageLogRow
    tokens = func.coalesce(func.sum(t.input_tokens + t.output_tokens), 0)
    called = (t.provider == provider) & t.outcome.in_(CALLED_OUTCOMES)
    d_start, d_end = day_range(day, tz)
    m_start, m_end = month_range(month, tz)
    with engine.connect() as conn:
        day_requests, day_tokens = conn.execute(
            select(func.count(), tokens).where(
                called, t.created_at >= d_start, t.created_at < d_end
            )
        ).one()
        month_tokens = conn.execute(
            select(tokens).where(called, t.created_at >= m_start, t.created_at < m_end)
        ).scalar_one()
    return int(day_requests), int(day_tokens), int(month_tokens)


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
    today = local_day(now, tz)
    given = {}
    for provider, quota in quotas.items():
        counts = totals(engine, provider, today, today, tz)
        quota.restore(*counts)
        given[provider] = counts
    return given
