"""Daily and monthly roll-ups of ``ai_usage_logs`` into ``ai_usage_daily`` / ``ai_usage_monthly``.

A day is a calendar day in ``AIPOOL_TIMEZONE``. The daily roll-up reads only the rows of that day,
selected by the UTC range of the local day, so the ``created_at`` index bounds the work by the
size of the day, not of the table. Both roll-ups are upserts keyed by (period, provider, model):
running one twice leaves the table as it was (rows whose numbers did not change are not even
rewritten, so ``updated_at`` stays put), and a group that vanished from the source is removed.

Columns: ``requests`` counts attempts; ``successes``/``failures`` split them on ``success``;
``fallbacks`` counts successful answers given by a hop other than the chain's first
(``fallback_position > 0``); ``cost_usd`` sums the per-attempt cost.

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
from dataclasses import asdict, dataclass
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
)

from aipool.ledger.models import DailyUsage, UsageLogRow, usage_daily, usage_monthly
from aipool.periods import day_range, month_start, next_month


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

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    @property
    def success_rate(self) -> float | None:
        """Successes over requests, ``None`` without requests."""
        return self.successes / self.requests if self.requests else None


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
    conn: Connection, start: datetime, end: datetime, *, by_model: bool = True
) -> list[Aggregate]:
    """Totals of the attempts created in UTC ``[start, end)``, per provider (and model).

    On PostgreSQL one statement computes everything, p95 included (``percentile_cont``). SQLite
    has no percentile function; there the latencies of the range are sorted in Python, which is
    fine at the embedded default's volumes.
    """
    t = UsageLogRow
    keys: list[Any] = [t.provider, t.model] if by_model else [t.provider]
    in_range = and_(t.created_at >= start, t.created_at < end)
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
        pct = (None if values[8] is None else float(values[8])) if postgres else p95.get(group)
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
                cost_usd=Decimal(values[6]).quantize(Decimal("0.000001")),
                avg_latency_ms=None if avg is None else round(avg, 3),
                p95_latency_ms=None if pct is None else round(pct, 3),
            )
        )
    return result


_VALUE_COLUMNS = (
    "requests",
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


def rollup_day(
    engine: Engine, day: date, tz: tzinfo | str | None = None, now: datetime | None = None
) -> int:
    """Recompute ``ai_usage_daily`` for the local calendar ``day``; returns the groups written.

    Idempotent: a second run with no new raw rows changes nothing.
    """
    start, end = day_range(day, tz)
    with engine.begin() as conn:
        groups = aggregate(conn, start, end)
        return _upsert(conn, usage_daily, "day", day, groups, now or datetime.now(UTC))


def rollup_month(engine: Engine, month: date, now: datetime | None = None) -> int:
    """Recompute ``ai_usage_monthly`` for ``month``'s calendar month from ``ai_usage_daily``.

    Run the daily roll-ups of the month first (the beat schedule does). Returns the groups
    written. See the module docstring for what the latency columns mean here.
    """
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
        )
        .where(d.day >= first, d.day < next_month(first))
        .group_by(d.provider, d.model)
        .order_by(d.provider, d.model)
    )
    with engine.begin() as conn:
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
                    cost_usd=Decimal(row[8]).quantize(Decimal("0.000001")),
                    avg_latency_ms=round(float(w_sum) / int(w), 3)
                    if w and w_sum is not None
                    else None,
                    p95_latency_ms=None if row[11] is None else float(row[11]),
                )
            )
        return _upsert(
            conn,
            usage_monthly,
            "month",
            first,
            groups,
            now or datetime.now(UTC),
        )
