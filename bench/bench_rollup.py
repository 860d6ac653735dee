"""Benchmark: does a day's roll-up cost grow with the day's rows or with the table?

Loads two PostgreSQL scratch databases with generate_series (seconds, not minutes):

- ``aipool_bench_big``: 1,000,000 usage rows spread evenly over 100 local days (~10,000 a day);
- ``aipool_bench_small``: 10,000 rows, all on the measured day.

Rows are generated in time order, as an append-only log grows, so one day's rows sit together
on disk (with rows of a day scattered over the whole heap the big table takes about 2x as long).

then times ``rollup_day`` for the same local day in both (median of several runs) and shows the
plan PostgreSQL picks for the day's range. Run: ``.venv/bin/python bench/bench_rollup.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from datetime import date
from pathlib import Path

from sqlalchemy import Engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aipool.ledger.periods import day_range, local_zone
from aipool.ledger.rollup import rollup_day
from aipool.ledger.testing import empty_ledger, ledger_engine

ZONE = local_zone("Asia/Taipei")
FIRST_DAY = date(2026, 1, 1)
MEASURED_DAY = date(2026, 2, 15)  # the 46th of the 100 days
RUNS = 7

_LOAD = text(
    """
    INSERT INTO ai_usage_logs (id, request_id, attempt, provider, model, input_tokens,
        output_tokens, latency_ms, success, outcome, fallback_position, cost_usd, created_at)
    SELECT gen_random_uuid(), :tag || g, 0,
           (ARRAY['ollama','gemini','claude','nemotron'])[1 + g % 4], 'm' || (g % 3),
           100 + g % 500, 50 + g % 200, 50 + (g * 7919) % 3000,
           g % 20 <> 0, CASE WHEN g % 20 = 0 THEN 'error' ELSE 'ok' END,
           (g % 5 = 0)::int, 0.000150,
           :start + ((g - 1) * (:days * 86400.0 / :n)) * interval '1 second'
    FROM generate_series(1::bigint, :n) AS g
    """
)


def _load(engine: Engine, n: int, first: date, days: int) -> float:
    start, _ = day_range(first, ZONE)
    began = time.perf_counter()
    empty_ledger(engine)
    with engine.begin() as conn:
        conn.execute(_LOAD, {"tag": "b", "start": start, "days": days, "n": n})
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE ai_usage_logs"))
    return time.perf_counter() - began


def _time_rollup(engine: Engine) -> tuple[float, int]:
    rollup_day(engine, MEASURED_DAY, ZONE)  # warm the cache, as a 5-minute beat run would be
    samples = []
    for _ in range(RUNS):
        began = time.perf_counter()
        rollup_day(engine, MEASURED_DAY, ZONE)
        samples.append(time.perf_counter() - began)
    start, end = day_range(MEASURED_DAY, ZONE)
    with engine.connect() as conn:
        day_rows = conn.execute(
            text("SELECT count(*) FROM ai_usage_logs WHERE created_at >= :s AND created_at < :e"),
            {"s": start, "e": end},
        ).scalar_one()
    return statistics.median(samples), int(day_rows)


def _plan(engine: Engine) -> str:
    start, end = day_range(MEASURED_DAY, ZONE)
    with engine.connect() as conn:
        lines = conn.execute(
            text(
                "EXPLAIN SELECT provider, model, count(*) FROM ai_usage_logs "
                "WHERE created_at >= :s AND created_at < :e GROUP BY provider, model"
            ),
            {"s": start, "e": end},
        ).scalars()
        return next((ln.strip() for ln in lines if "Scan" in ln), "?")


def main() -> None:
    big = ledger_engine("aipool_bench_big")
    small = ledger_engine("aipool_bench_small")
    load_big = _load(big, 1_000_000, FIRST_DAY, 100)
    load_small = _load(small, 10_000, MEASURED_DAY, 1)
    big_s, big_day = _time_rollup(big)
    small_s, small_day = _time_rollup(small)
    print(f"roll-up of {MEASURED_DAY} ({ZONE}), median of {RUNS} runs, PostgreSQL")
    print(f"{'table rows':>12} {'rows that day':>14} {'roll-up ms':>11} {'load s':>7}  plan")
    print(f"{1_000_000:>12,} {big_day:>14,} {big_s * 1000:>11.1f} {load_big:>7.1f}  {_plan(big)}")
    print(
        f"{10_000:>12,} {small_day:>14,} {small_s * 1000:>11.1f} {load_small:>7.1f}  {_plan(small)}"
    )
    print(f"ratio big/small: {big_s / small_s:.2f}x")
    for engine in (big, small):
        engine.dispose()


if __name__ == "__main__":
    main()
