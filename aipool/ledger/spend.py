"""Spend so far: the one definition of what a period has used and cost, read from the ledger.

Every figure a decision or a person sees (budget checks, the budget gauges, the quota restore)
is :func:`spend` over whole local calendar days in ``AIPOOL_TIMEZONE``, and it always equals the
sum of the raw ``ai_usage_logs`` rows of those days, whatever arrived late and whenever the
roll-up last ran:

    spend(days) = Σ ai_usage_daily rows of the days
                + Σ ai_usage_logs rows of the days not yet rolled up

A row is *rolled up* when its ``ledger_seq`` (the arrival number of the write that stored it) is
at or below the ledger clock's ``rolled_through``: every row is in exactly one of the two terms at
any instant, because every write into ``ai_usage_logs`` and every roll-up first takes the ledger
clock (:func:`take_clock`; a row lock on PostgreSQL, the write lock on SQLite) and the watermark
moves in the same transaction as the roll-up tables it describes. The figure is read in one SQL
statement, so it never sees one without the other: it never dips, never counts a row twice.

A call belongs to the day (and month) it **started**: ``created_at`` is the call's start, and the
quota books its reservation on that same day. A row of the 5th that arrives on the 9th counts in
the 5th, in the 5th's month, from the moment it is stored.

The cost of a read grows with the period's roll-up rows (about 31 per provider and model for a
month) plus the rows that arrived since the last roll-up (found through the ``ledger_seq`` index),
never with the table: see :mod:`aipool.ledger.rollup`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, timedelta, tzinfo
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Engine, and_, case, func, literal, or_, select, union_all, update

from aipool.contract.vocabulary import CALLED_OUTCOMES
from aipool.ledger.models import ledger_clock, usage_daily, usage_logs
from aipool.periods import day_range, month_start, next_month

#: The ledger clock's only row.
CLOCK_ID = 1


class LedgerNotMigrated(RuntimeError):
    """The ledger database has no clock row: it was not migrated to this version (``aipool
    migrate``, or a worker's start, migrates it)."""


@dataclass(frozen=True)
class Spend:
    """One provider's use of a period: calls that reached it, tokens and cost (exact)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    @property
    def tokens(self) -> int:
        """Input plus output tokens, as the quotas count them."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class PeriodSpend:
    """Every provider's :class:`Spend` over a period and over one day of it (``day``)."""

    period: dict[str, Spend]
    day: dict[str, Spend]

    def cost(self) -> Decimal:
        """The period's cost, all providers together."""
        return sum((s.cost_usd for s in self.period.values()), Decimal(0))


def take_clock(conn: Connection) -> tuple[int, int]:
    """Advance the ledger clock inside ``conn``'s transaction: ``(seq, rolled_through)``.

    The first statement of every write into ``ai_usage_logs`` and of every roll-up: the clock's
    row stays locked until the transaction ends, so they take turns, and ``seq`` is a number no
    other transaction was given.
    """
    c = ledger_clock.c
    row = conn.execute(
        update(ledger_clock)
        .where(c.id == CLOCK_ID)
        .values(seq=c.seq + 1)
        .returning(c.seq, c.rolled_through)
    ).one_or_none()
    if row is None:
        raise LedgerNotMigrated("the ledger has no clock row: run `aipool migrate`")
    return int(row[0]), int(row[1])


def not_rolled_up() -> Any:
    """The condition on ``ai_usage_logs`` of rows the roll-up tables do not hold yet."""
    rolled = (
        select(ledger_clock.c.rolled_through).where(ledger_clock.c.id == CLOCK_ID).scalar_subquery()
    )
    seq = usage_logs.c.ledger_seq
    return or_(seq.is_(None), seq > rolled)


def _statement(first: date, last: date, day: date, zone: tzinfo) -> Any:
    d, t = usage_daily.c, usage_logs.c
    start, _ = day_range(first, zone)
    _, end = day_range(last, zone)
    day_start, day_end = day_range(day, zone)
    rolled = select(
        d.provider,
        (d.day == day).label("today"),
        d.calls.label("calls"),
        d.input_tokens.label("input_tokens"),
        d.output_tokens.label("output_tokens"),
        d.cost_usd.label("cost_usd"),
    ).where(d.day >= first, d.day <= last)
    pending = select(
        t.provider,
        and_(t.created_at >= day_start, t.created_at < day_end).label("today"),
        case((t.outcome.in_(CALLED_OUTCOMES), 1), else_=0).label("calls"),
        t.input_tokens,
        t.output_tokens,
        t.cost_usd,
    ).where(t.created_at >= start, t.created_at < end, not_rolled_up())
    both = union_all(rolled, pending).subquery()
    u = both.c

    def on_day(column: Any) -> Any:
        return func.sum(case((u.today, column), else_=literal(0, column.type)))

    return select(
        u.provider,
        func.sum(u.calls),
        func.sum(u.input_tokens),
        func.sum(u.output_tokens),
        func.sum(u.cost_usd),
        on_day(u.calls),
        on_day(u.input_tokens),
        on_day(u.output_tokens),
        on_day(u.cost_usd),
    ).group_by(u.provider)


def spend(
    conn: Connection | Engine,
    first: date,
    last: date,
    zone: tzinfo,
    *,
    day: date | None = None,
) -> PeriodSpend:
    """Per provider, the spend of the local days ``first`` to ``last`` (both included) and of
    ``day`` among them (default ``last``), read in one statement (see the module docstring)."""
    statement = _statement(first, last, last if day is None else day, zone)
    if isinstance(conn, Engine):
        with conn.connect() as c:
            rows = c.execute(statement).all()
    else:
        rows = conn.execute(statement).all()
    period, on_day = {}, {}
    for provider, *values in rows:
        period[provider] = Spend(int(values[0]), int(values[1]), int(values[2]), _money(values[3]))
        on_day[provider] = Spend(int(values[4]), int(values[5]), int(values[6]), _money(values[7]))
    return PeriodSpend(period, on_day)


def month_spend(conn: Connection | Engine, today: date, zone: tzinfo) -> PeriodSpend:
    """The spend of ``today``'s whole local calendar month, and of ``today``."""
    first = month_start(today)
    return spend(conn, first, next_month(first) - timedelta(days=1), zone, day=today)


def service_month_cost(engine: Engine, today: date, zone: tzinfo) -> dict[str, Decimal]:
    """Per service, what ``today``'s local calendar month has cost so far (raw rows, on the
    (service, created_at) index): a service's budget is counted from it."""
    start, _ = day_range(month_start(today), zone)
    _, end = day_range(next_month(month_start(today)) - timedelta(days=1), zone)
    u = usage_logs
    statement = (
        select(u.c.service, func.coalesce(func.sum(u.c.cost_usd), 0))
        .where(u.c.created_at >= start, u.c.created_at < end, u.c.outcome.in_(CALLED_OUTCOMES))
        .group_by(u.c.service)
    )
    with engine.connect() as conn:
        return {str(service): _money(cost) for service, cost in conn.execute(statement)}


def total_cost(spends: Iterable[Spend]) -> Decimal:
    """The cost of ``spends`` together."""
    return sum((s.cost_usd for s in spends), Decimal(0))


def _money(value: Any) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(str(value or 0))
