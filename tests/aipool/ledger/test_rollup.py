"""Roll-ups: local calendar days in Asia/Taipei, idempotent upserts, month from days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from aipool.ledger.models import DailyUsage, MonthlyUsage, usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.rollup import rollup_day, rollup_month
from aipool.ledger.usage_log import _row

TAIPEI = ZoneInfo("Asia/Taipei")


def _insert(engine: Engine, *records: UsageRecord) -> None:
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), [_row(r) for r in records])


def _rec(n: int, at: datetime, **kw: object) -> UsageRecord:
    fields: dict[str, object] = {
        "provider": "gemini",
        "model": "gemini-2.5-flash",
        "outcome": "ok",
        "success": True,
        "input_tokens": 100,
        "output_tokens": 50,
        "latency_ms": 100 * (n % 10 + 1),
        "cost_usd": Decimal("0.00015"),
        "created_at": at,
    }
    fields.update(kw)
    return UsageRecord(f"req-{n}-{at.isoformat()}", 0, **fields)  # type: ignore[arg-type]


def _table(engine: Engine, model: type) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(model.__table__)).all()]  # type: ignore[attr-defined]


def test_given_calls_at_local_midnight_when_rolled_up_then_they_fall_in_different_days(
    engine: Engine,
) -> None:
    # Given: one call at 23:59:59 and one at 00:00:00 Taipei time (15:59:59 / 16:00:00 UTC)
    before = datetime(2026, 3, 14, 23, 59, 59, tzinfo=TAIPEI)
    after = datetime(2026, 3, 15, 0, 0, 0, tzinfo=TAIPEI)
    _insert(engine, _rec(1, before), _rec(2, after))
    # When
    rollup_day(engine, date(2026, 3, 14), "Asia/Taipei")
    rollup_day(engine, date(2026, 3, 15), "Asia/Taipei")
    # Then
    with engine.connect() as conn:
        days = dict(conn.execute(select(DailyUsage.day, DailyUsage.requests)).all())
    assert days == {date(2026, 3, 14): 1, date(2026, 3, 15): 1}


def test_given_calls_at_local_month_end_when_rolled_up_then_months_split_in_taipei(
    engine: Engine,
) -> None:
    # Given: 2026-03-31 23:59:59 and 2026-04-01 00:00:00 in Taipei, both on March 31 in UTC
    last = datetime(2026, 3, 31, 23, 59, 59, tzinfo=TAIPEI)
    first = datetime(2026, 4, 1, 0, 0, 0, tzinfo=TAIPEI)
    assert last.astimezone(UTC).month == first.astimezone(UTC).month == 3
    _insert(engine, _rec(1, last), _rec(2, first))
    # When
    for day in (date(2026, 3, 31), date(2026, 4, 1)):
        rollup_day(engine, day, TAIPEI)
    rollup_month(engine, date(2026, 3, 1))
    rollup_month(engine, date(2026, 4, 1))
    # Then
    with engine.connect() as conn:
        months = dict(conn.execute(select(MonthlyUsage.month, MonthlyUsage.requests)).all())
    assert months == {date(2026, 3, 1): 1, date(2026, 4, 1): 1}


def test_given_a_day_of_calls_when_rolled_up_twice_then_the_table_is_unchanged(
    engine: Engine,
) -> None:
    # Given: successes, a failure and a fallback answer for two models
    noon = datetime(2026, 3, 14, 12, tzinfo=TAIPEI)
    records = [_rec(i, noon + timedelta(minutes=i)) for i in range(20)]
    records.append(
        _rec(99, noon, success=False, outcome="error", latency_ms=5000, cost_usd=Decimal(0))
    )
    records.append(_rec(98, noon, model="gemini-2.5-pro", fallback_position=1))
    _insert(engine, *records)
    # When
    written = rollup_day(engine, date(2026, 3, 14), TAIPEI, now=datetime(2026, 3, 14, tzinfo=UTC))
    first = _table(engine, DailyUsage)
    rollup_day(engine, date(2026, 3, 14), TAIPEI, now=datetime(2026, 3, 15, tzinfo=UTC))
    second = _table(engine, DailyUsage)
    # Then: identical, updated_at included (unchanged rows are not rewritten)
    assert written == 2
    assert first == second
    with Session(engine) as session:
        flash = session.scalars(
            select(DailyUsage).where(DailyUsage.model == "gemini-2.5-flash")
        ).one()
        pro = session.scalars(select(DailyUsage).where(DailyUsage.model == "gemini-2.5-pro")).one()
    assert (flash.requests, flash.successes, flash.failures, flash.fallbacks) == (21, 20, 1, 0)
    assert (flash.input_tokens, flash.output_tokens) == (2100, 1050)
    assert flash.cost_usd == Decimal("0.003000")
    assert flash.p95_latency_ms is not None and 1000 <= flash.p95_latency_ms <= 5000
    assert pro.fallbacks == 1


def test_given_new_calls_when_rolled_up_again_then_only_the_totals_move(engine: Engine) -> None:
    # Given
    noon = datetime(2026, 3, 14, 12, tzinfo=TAIPEI)
    _insert(engine, _rec(1, noon))
    rollup_day(engine, date(2026, 3, 14), TAIPEI)
    # When
    _insert(engine, _rec(2, noon), _rec(3, noon, provider="claude", model="claude-sonnet-5"))
    rollup_day(engine, date(2026, 3, 14), TAIPEI)
    # Then
    with engine.connect() as conn:
        rows = dict(conn.execute(select(DailyUsage.provider, DailyUsage.requests)).all())
    assert rows == {"gemini": 2, "claude": 1}


def test_given_daily_rows_when_month_rolled_up_twice_then_sums_and_bounds(engine: Engine) -> None:
    # Given: two days, the second slower
    d1 = datetime(2026, 2, 1, 9, tzinfo=TAIPEI)
    d2 = datetime(2026, 2, 28, 9, tzinfo=TAIPEI)
    _insert(engine, *(_rec(i, d1, latency_ms=100) for i in range(3)))
    _insert(engine, *(_rec(i, d2, latency_ms=400) for i in range(1)))
    for day in (date(2026, 2, 1), date(2026, 2, 28)):
        rollup_day(engine, day, TAIPEI)
    # When
    rollup_month(engine, date(2026, 2, 14), now=datetime(2026, 3, 1, tzinfo=UTC))
    first = _table(engine, MonthlyUsage)
    rollup_month(engine, date(2026, 2, 14), now=datetime(2026, 3, 2, tzinfo=UTC))
    # Then
    assert _table(engine, MonthlyUsage) == first
    with Session(engine) as session:
        month = session.scalars(select(MonthlyUsage)).one()
    assert month.month == date(2026, 2, 1)
    assert month.requests == 4
    assert month.avg_latency_ms == 175.0
    assert month.p95_latency_ms == 400.0
    assert month.cost_usd == Decimal("0.000600")
