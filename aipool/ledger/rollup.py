"""Daily and monthly roll-ups of ``ai_usage_logs`` into ``ai_usage_daily`` / ``ai_usage_monthly``.

A day is a calendar day in ``AIPOOL_TIMEZONE``, and a row belongs to the day its call started
(``created_at``). :func:`rollup` is the beat's one roll-up task: under the ledger clock
(:func:`aipool.ledger.spend.take_clock`) it numbers any row stored without a number, recomputes
**every day that received rows since the last roll-up** (rows numbered above the watermark
``rolled_through``: late rows of any closed day included) and the months of those days, and moves
the watermark, all in one transaction. Its cost grows with the days that received rows, not with
the table: finding them reads the new rows through the ``ledger_seq`` index, and recomputing one
reads that day's rows through the ``created_at`` index. What the roll-up tables hold is then
exactly the rows numbered up to the watermark, which :mod:`aipool.ledger.spend` relies on.

Both tables are upserts keyed by (period, provider, model): recomputing leaves the table as it was
when nothing changed (unchanged rows are not even rewritten, so ``updated_at`` stays put), and a
group that vanished from the source is removed.

Columns: ``requests`` counts attempts; ``calls`` those that reached the provider (outcomes ok and
error, what request quotas count); ``successes``/``failures`` split attempts on ``success``;
``fallbacks`` counts successful answers given by a hop other than the chain's first
(``fallback_position > 0``); ``cost_usd`` sums the per-attempt cost exactly (picodollars).

The monthly roll-up is computed from the daily table (about 31 rows per provider and model), not
from raw rows. Its ``avg_latency_ms`` is the request-weighted mean of the daily means (exact when
every attempt has a latency), and its ``p95_latency_ms`` is the **largest daily p95**: an upper
bound of the month's true p95 (if no day has more than 5% of its attempts above M, neither has
the month). An exact monthly percentile would need a sort of the month's raw rows; when needed,
``aggregate()`` over ``month_range()`` computes it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, tzinfo
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Table,
    and_,
    case,
    delete,
    func,
    or_,
    select,
    tuple_,
    update,
)

from aipool.contract.vocabulary import CALLED_OUTCOMES
from aipool.ledger.models import (
    DailyUsage,
    UsageLogRow,
    ledger_clock,
    usage_daily,
    usage_logs,
    usage_monthly,
)
from aipool.ledger.spend import CLOCK_ID, take_clock
from aipool.periods import day_range, local_day, month_start, next_month, pool_zone


@dataclass(frozen=True)
class Aggregate:
    """Totals of one group of attempts (a provider, or a provider and model) over a period."""

    provider: str
    model: str
    requests: int
    successes: int
    failures: int
    fallbacks: int
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    avg_latency_ms: float | None
    p95_latency_ms: float | None
    calls: int = 0

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


#: ``Aggregate.model`` when a group spans every model of a provider.
ALL_MODELS = "*"


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile, the same definition as PostgreSQL's percentile_cont."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def aggregate(
    conn: Connection,
    start: datetime,
    end: datetime,
    *,
    by_model: bool = True,
    through: int | None = None,
) -> list[Aggregate]:
    """Totals of the attempts created in UTC ``[start, end)``, per provider (and model); with
    ``through``, only of the rows numbered up to it (what the roll-up tables are to hold).

    On PostgreSQL one statement computes everything, p95 included (``percentile_cont``). SQLite
    has no percentile function; there the latencies of the range are sorted in Python, which is
    fine at the embedded default's volumes.
    """
    t = UsageLogRow
    keys: list[Any] = [t.provider, t.model] if by_model else [t.provider]
    in_range = and_(t.created_at >= start, t.created_at < end)
    if through is not None:
        in_range = and_(in_range, t.ledger_seq <= through)
    postgres = conn.dialect.name == "postgresql"
    columns: list[Any] = [
        func.count(),
        func.sum(case((t.success, 1), else_=0)),
        func.sum(case((t.success, 0), else_=1)),
        func.sum(case((and_(t.success, t.fallback_position > 0), 1), else_=0)),
        func.coalesce(func.sum(t.input_tokens), 0),
        func.coalesce(func.sum(t.output_tokens), 0),
        func.coalesce(func.sum(t.cost_usd), 0),
        func.avg(t.latency_ms),
        func.sum(case((t.outcome.in_(CALLED_OUTCOMES), 1), else_=0)),
    ]
    if postgres:
        columns.append(func.percentile_cont(0.95).within_group(t.latency_ms))
    rows = conn.execute(
        select(*keys, *columns).where(in_range).group_by(*keys).order_by(*keys)
    ).all()
    p95: dict[tuple[str, ...], float | None] = {}
    if not postgres:
        latencies: dict[tuple[str, ...], list[float]] = defaultdict(list)
        for row in conn.execute(
            select(*keys, t.latency_ms).where(in_range, t.latency_ms.is_not(None))
        ):
            latencies[tuple(row[: len(keys)])].append(float(row[-1]))
        p95 = {k: _percentile(sorted(v), 0.95) for k, v in latencies.items()}
    result = []
    for row in rows:
        group = tuple(row[: len(keys)])
        values = row[len(keys) :]
        avg = None if values[7] is None else float(values[7])
        pct = (None if values[9] is None else float(values[9])) if postgres else p95.get(group)
        result.append(
            Aggregate(
                provider=group[0],
                model=group[1] if by_model else ALL_MODELS,
                requests=int(values[0]),
                successes=int(values[1] or 0),
                failures=int(values[2] or 0),
                fallbacks=int(values[3] or 0),
                input_tokens=int(values[4]),
                output_tokens=int(values[5]),
                cost_usd=Decimal(values[6]),
                avg_latency_ms=None if avg is None else round(avg, 3),
                p95_latency_ms=None if pct is None else round(pct, 3),
                calls=int(values[8] or 0),
            )
        )
    return result


_VALUE_COLUMNS = (
    "requests",
    "calls",
    "successes",
    "failures",
    "fallbacks",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "avg_latency_ms",
    "p95_latency_ms",
)


def _upsert(
    conn: Connection,
    table: Table,
    period_column: str,
    period: date,
    groups: list[Aggregate],
    now: datetime,
) -> int:
    """Write ``groups`` for ``period``; leave unchanged rows untouched; drop vanished groups."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    period_col = table.c[period_column]
    keep = [(g.provider, g.model) for g in groups]
    stale = delete(table).where(period_col == period)
    if keep:
        stale = stale.where(tuple_(table.c.provider, table.c.model).not_in(keep))
    conn.execute(stale)
    if not groups:
        return 0
    rows = []
    for g in groups:
        row = asdict(g)
        row[period_column] = period
        row["updated_at"] = now
        rows.append(row)
    stmt = insert(table)
    changed = or_(*(table.c[c].is_distinct_from(stmt.excluded[c]) for c in _VALUE_COLUMNS))
    stmt = stmt.on_conflict_do_update(
        index_elements=[period_column, "provider", "model"],
        set_={c: stmt.excluded[c] for c in (*_VALUE_COLUMNS, "updated_at")},
        where=changed,
    )
    conn.execute(stmt, rows)
    return len(rows)


def _refresh_day(conn: Connection, day: date, zone: tzinfo, through: int, now: datetime) -> int:
    start, end = day_range(day, zone)
    groups = aggregate(conn, start, end, through=through)
    return _upsert(conn, usage_daily, "day", day, groups, now)


def _refresh_month(conn: Connection, month: date, now: datetime) -> int:
    d = DailyUsage
    first = month_start(month)
    weighted = func.sum(d.avg_latency_ms * d.requests)
    weight = func.sum(case((d.avg_latency_ms.is_not(None), d.requests), else_=0))
    query = (
        select(
            d.provider,
            d.model,
            func.sum(d.requests),
            func.sum(d.successes),
            func.sum(d.failures),
            func.sum(d.fallbacks),
            func.sum(d.input_tokens),
            func.sum(d.output_tokens),
            func.sum(d.cost_usd),
            weighted,
            weight,
            func.max(d.p95_latency_ms),
            func.sum(d.calls),
        )
        .where(d.day >= first, d.day < next_month(first))
        .group_by(d.provider, d.model)
        .order_by(d.provider, d.model)
    )
    groups = []
    for row in conn.execute(query):
        w_sum, w = row[9], row[10]
        groups.append(
            Aggregate(
                provider=row[0],
                model=row[1],
                requests=int(row[2]),
                successes=int(row[3]),
                failures=int(row[4]),
                fallbacks=int(row[5]),
                input_tokens=int(row[6]),
                output_tokens=int(row[7]),
                cost_usd=Decimal(row[8]),
                avg_latency_ms=round(float(w_sum) / int(w), 3) if w and w_sum is not None else None,
                p95_latency_ms=None if row[11] is None else float(row[11]),
                calls=int(row[12]),
            )
        )
    return _upsert(conn, usage_monthly, "month", first, groups, now)


def refresh_days(
    conn: Connection, days: Iterable[date], zone: tzinfo, through: int, now: datetime
) -> dict[date, int]:
    """Recompute ``days`` (and their months) from the rows numbered up to ``through``, inside
    ``conn``'s transaction, which must hold the ledger clock. Returns the groups written per day.

    The drain calls it when a stored row that was rolled up is replaced (a redelivered hop's paid
    answer replacing its error row): the day must drop the old version in the same transaction.
    """
    written = {day: _refresh_day(conn, day, zone, through, now) for day in sorted(set(days))}
    for month in sorted({month_start(day) for day in written}):
        _refresh_month(conn, month, now)
    return written


def _pending_days(conn: Connection, rolled_through: int, zone: tzinfo) -> list[date]:
    """The local days of the rows numbered above ``rolled_through``: one ``min()`` per day found,
    each an index range scan, so a late day costs one more query, not a scan of the table."""
    t = usage_logs.c
    days: list[date] = []
    after: datetime | None = None
    while True:
        query = select(func.min(t.created_at)).where(t.ledger_seq > rolled_through)
        if after is not None:
            query = query.where(t.created_at >= after)
        first = conn.execute(query).scalar_one_or_none()
        if first is None:
            return days
        day = local_day(first, zone)
        days.append(day)
        after = day_range(day, zone)[1]


@dataclass(frozen=True)
class RollupResult:
    """What one :func:`rollup` did: the groups written per day recomputed, and the watermark."""

    days: dict[date, int] = field(default_factory=dict)
    rolled_through: int = 0

    @property
    def months(self) -> list[date]:
        """The first days of the months recomputed."""
        return sorted({month_start(day) for day in self.days})


def rollup(
    engine: Engine,
    tz: tzinfo | str | None = None,
    now: datetime | None = None,
    *,
    days: Iterable[date] = (),
) -> RollupResult:
    """Bring the roll-up tables up to every row stored so far (see the module docstring), and
    recompute ``days`` too even if none of their rows is new. Idempotent; safe to run anywhere,
    at any time, concurrently with drains and with another roll-up (they take turns)."""
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    now = now or datetime.now(UTC)
    with engine.begin() as conn:
        seq, rolled_through = take_clock(conn)
        t = usage_logs.c
        # Rows stored by a writer that bypassed the drain (none of aipool's own) get a number now.
        conn.execute(update(usage_logs).where(t.ledger_seq.is_(None)).values(ledger_seq=seq))
        pending = set(_pending_days(conn, rolled_through, zone)) | set(days)
        written = refresh_days(conn, pending, zone, seq, now)
        conn.execute(
            update(ledger_clock)
            .where(ledger_clock.c.id == CLOCK_ID)
            .values(rolled_through=seq, rolled_at=now)
        )
    return RollupResult(written, seq)


def rollup_day(
    engine: Engine, day: date, tz: tzinfo | str | None = None, now: datetime | None = None
) -> int:
    """Roll up everything pending, recomputing the local calendar ``day`` in any case; returns the
    groups written for ``day``. Idempotent: a second run with no new raw rows changes nothing."""
    return rollup(engine, tz, now, days=[day]).days[day]


def rollup_month(engine: Engine, month: date, now: datetime | None = None) -> int:
    """Recompute ``ai_usage_monthly`` for ``month``'s calendar month from ``ai_usage_daily``;
    returns the groups written. :func:`rollup` already does this for every month it touches.
    See the module docstring for what the latency columns mean here.
    """
    with engine.begin() as conn:
        take_clock(conn)
        return _refresh_month(conn, month, now or datetime.now(UTC))
