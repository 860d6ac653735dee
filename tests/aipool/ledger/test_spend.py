"""Spend so far: the figure decisions read equals the period's raw rows at every instant, on
both ledger backends, whatever arrives late and whenever the roll-up runs; money is exact."""

from __future__ import annotations

import time
from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from sqlalchemy import Engine, func, select, text

from aipool.ledger.models import MonthlyUsage, UsageLogRow, usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.rollup import rollup
from aipool.ledger.spend import month_spend, spend, take_clock
from aipool.ledger.usage_log import _row, store_now
from aipool.prices.table import Price
from tests.support.sizes import sized

TAIPEI = ZoneInfo("Asia/Taipei")
MARCH = date(2027, 3, 1)


def _call(n: int, day: int, cost: str, *, hour: int = 12, **kw: object) -> UsageRecord:
    fields: dict[str, object] = {
        "provider": "gemini",
        "model": "gemini-2.5-flash",
        "outcome": "ok",
        "success": True,
        "input_tokens": 100,
        "output_tokens": 50,
        "cost_usd": Decimal(cost),
        "created_at": datetime(2027, 3, day, hour, tzinfo=TAIPEI),
    }
    fields.update(kw)
    return UsageRecord(f"req-{n}", 0, **fields)  # type: ignore[arg-type]


def _raw_month_cost(engine: Engine) -> Decimal:
    start = datetime(2027, 3, 1, tzinfo=TAIPEI)
    end = datetime(2027, 4, 1, tzinfo=TAIPEI)
    t = UsageLogRow
    with engine.connect() as conn:
        value = conn.execute(
            select(func.coalesce(func.sum(t.cost_usd), 0)).where(
                t.created_at >= start, t.created_at < end
            )
        ).scalar_one()
    return Decimal(value)


def _month_cost(engine: Engine, today: date) -> Decimal:
    return month_spend(engine, today, TAIPEI).cost()


def test_given_calls_of_the_5th_arriving_on_the_9th_then_the_month_counts_them_at_once(
    any_engine: Engine,
) -> None:
    # Given: $2.00 of Gemini on the 3rd, stored on time and rolled up every day since
    engine = any_engine
    store_now(engine, _call(1, 3, "2.00"))
    rollup(engine, TAIPEI)
    for _ in range(5, 9):
        rollup(engine, TAIPEI)
    # When: $3.60 of calls made on the 5th reach the ledger on the 9th (the database was down)
    for n in range(4):
        store_now(engine, _call(10 + n, 5, "0.90"))
    # Then: the month already reads $5.60, before any roll-up...
    assert _month_cost(engine, date(2027, 3, 9)) == Decimal("5.60")
    # ...and after the roll-up, which recomputes the 5th and the month
    done = rollup(engine, TAIPEI)
    assert list(done.days) == [date(2027, 3, 5)] and done.months == [MARCH]
    assert _month_cost(engine, date(2027, 3, 9)) == Decimal("5.60") == _raw_month_cost(engine)
    with engine.connect() as conn:
        monthly = conn.execute(select(MonthlyUsage.cost_usd, MonthlyUsage.calls)).all()
    assert [(Decimal(c), n) for c, n in monthly] == [(Decimal("5.60"), 5)]
    assert spend(engine, date(2027, 3, 5), date(2027, 3, 5), TAIPEI).cost() == Decimal("3.60")


def test_given_rows_of_a_closed_day_drained_after_its_roll_up_then_midnight_never_dips(
    any_engine: Engine,
) -> None:
    # Given: at 23:55 the roll-up ran over the day's $4.95
    engine = any_engine
    store_now(engine, _call(1, 3, "4.95", hour=20))
    rollup(engine, TAIPEI)
    # When: the day's last $0.10 is drained after it
    store_now(engine, _call(2, 3, "0.10", hour=23))
    # Then: the month reads $5.05 on the 3rd and still at 00:00 on the 4th, before any roll-up
    assert _month_cost(engine, date(2027, 3, 3)) == Decimal("5.05")
    assert _month_cost(engine, date(2027, 3, 4)) == Decimal("5.05")
    rollup(engine, TAIPEI)
    assert _month_cost(engine, date(2027, 3, 4)) == Decimal("5.05")


def test_given_a_rolled_up_error_row_replaced_by_its_paid_answer_then_it_counts_once(
    any_engine: Engine,
) -> None:
    # Given: a redelivered hop's error row, stored and rolled up
    engine = any_engine
    store_now(engine, _call(1, 3, "1.00"))
    store_now(engine, _call(7, 3, "0", outcome="error", success=False, input_tokens=0))
    rollup(engine, TAIPEI)
    # When: the same attempt's paid answer arrives
    store_now(engine, _call(7, 3, "0.50"))
    # Then: the figure counts the paid answer once, before and after the next roll-up
    assert _month_cost(engine, date(2027, 3, 3)) == Decimal("1.50") == _raw_month_cost(engine)
    figures = month_spend(engine, date(2027, 3, 3), TAIPEI).period["gemini"]
    assert (figures.calls, figures.input_tokens) == (2, 200)
    rollup(engine, TAIPEI)
    assert _month_cost(engine, date(2027, 3, 3)) == Decimal("1.50")


def test_given_rows_written_around_the_drain_then_they_count_once_and_are_rolled_up(
    any_engine: Engine,
) -> None:
    # Given: a row inserted straight into the table (no ledger clock number)
    engine = any_engine
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), [_row(_call(1, 3, "0.25"))])
    # Then: it counts, once, before and after the roll-up numbers it
    assert _month_cost(engine, date(2027, 3, 3)) == Decimal("0.25")
    assert list(rollup(engine, TAIPEI).days) == [date(2027, 3, 3)]
    assert _month_cost(engine, date(2027, 3, 3)) == Decimal("0.25")
    with engine.connect() as conn:
        assert conn.execute(select(UsageLogRow.ledger_seq)).scalar_one() is not None


def test_given_a_call_started_before_midnight_then_it_counts_in_the_day_it_started(
    any_engine: Engine,
) -> None:
    # Given: a call that started at 23:59:59 local and whose row was written after midnight
    engine = any_engine
    started = datetime(2027, 3, 3, 23, 59, 59, tzinfo=TAIPEI)
    store_now(engine, _call(1, 3, "0.30", created_at=started))
    rollup(engine, TAIPEI)
    # Then: the 3rd holds it, the 4th does not
    assert spend(engine, date(2027, 3, 3), date(2027, 3, 3), TAIPEI).cost() == Decimal("0.30")
    assert spend(engine, date(2027, 3, 4), date(2027, 3, 4), TAIPEI).cost() == 0


#: Cheap calls summed: 100,000 in make test, a million (a busy month of Flash-Lite) under make soak.
CHEAP_CALLS = sized(100_000, 1_000_000)


def test_given_many_cheap_calls_then_the_month_sums_them_exactly(engine: Engine) -> None:
    # Given: CHEAP_CALLS 11-token calls at Gemini Flash-Lite's $0.075 per million input tokens
    one_call = Price(Decimal("0.000075"), Decimal("0.0003")).cost(11, 0)
    assert one_call == Decimal("0.000000825")
    started = time.perf_counter()
    with engine.begin() as conn:
        seq, _ = take_clock(conn)  # numbered as the drain numbers a batch
        conn.execute(
            text(
                "INSERT INTO ai_usage_logs (id, request_id, journey_id, attempt, provider, model, "
                "input_tokens, output_tokens, success, outcome, fallback_position, cost_usd, "
                "created_at, ledger_seq) "
                "SELECT gen_random_uuid(), 'r' || n, 'r' || n, 0, 'gemini', 'gemini-2.5-flash-lite', "
                "11, 0, "
                "true, 'ok', 0, :cost, "
                "TIMESTAMPTZ '2027-03-03 00:00:00+08' + n * INTERVAL '80 milliseconds', :seq "
                "FROM generate_series(1, :calls) AS n"
            ),
            {"cost": one_call, "seq": seq, "calls": CHEAP_CALLS},
        )
    # When: the month is read as the budget checks read it
    month = _month_cost(engine, date(2027, 3, 4))
    elapsed = time.perf_counter() - started
    # Then: exactly $0.000000825 a call, where per-call rounding to a millionth would have booked
    # $0.000001 a call (21% more)
    exact = one_call * CHEAP_CALLS
    assert month == exact == _raw_month_cost(engine)
    assert sum((one_call for _ in range(CHEAP_CALLS)), Decimal(0)) == exact
    assert exact < Decimal("0.000001") * CHEAP_CALLS
    print(f"{CHEAP_CALLS:,} calls inserted and summed in {elapsed:.1f} s")


def test_given_sub_microdollar_calls_in_the_embedded_ledger_then_sums_are_exact(
    sqlite_engine: Engine,
) -> None:
    # Given: 10,000 calls of $0.000000825 in SQLite, which has no decimal type
    from aipool.ledger.usage_log import _store

    one_call = Decimal("0.000000825")
    rows = [_row(_call(n, 3, str(one_call), input_tokens=11)) for n in range(10_000)]
    _store(sqlite_engine, rows)
    # When / Then: the figure is exact before and after the roll-up, to the picodollar
    assert _month_cost(sqlite_engine, date(2027, 3, 3)) == Decimal("0.00825")
    rollup(sqlite_engine, TAIPEI)
    assert _month_cost(sqlite_engine, date(2027, 3, 3)) == Decimal("0.00825")
    assert _raw_month_cost(sqlite_engine) == Decimal("0.00825")
