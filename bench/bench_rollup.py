"""Benchmark: does a day's roll-up cost grow with the day's rows or with the table?

Loads the bench ledger database (``aipool_bench``, ``AIPOOL_BENCH_DATABASE``) with generate_series
(seconds, not minutes), one table size after the other:

- 10,000 rows, all on the measured day;
- 1,000,000 usage rows spread evenly over 100 local days (~10,000 a day); ``--quick`` loads
  100,000 over 10 days instead (the same ~10,000 on the measured day).

Rows are generated in time order, as an append-only log grows, so one day's rows sit together
on disk (with rows of a day scattered over the whole heap the big table takes about 2x as long).

then times ``rollup_day`` for the same local day in both (median of several runs) and shows the
plan PostgreSQL picks for the day's range. Run: ``.venv/bin/python bench/bench_rollup.py
[--quick]``; ``bench/run`` reports the same figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aipool.ledger.db import make_engine
from aipool.ledger.rollup import rollup_day
from aipool.ledger.spend import take_clock
from aipool.ledger.testing import empty_ledger
from aipool.periods import day_range, pool_zone

ZONE = pool_zone("Asia/Taipei")
MEASURED_DAY = date(2026, 2, 15)
RUNS = 7

_LOAD = text(
    """
    INSERT INTO ai_usage_logs (id, request_id, journey_id, attempt, provider, model, input_tokens,
        output_tokens, latency_ms, success, outcome, fallback_position, cost_usd, created_at,
        ledger_seq)
    SELECT gen_random_uuid(), :tag || g, :tag || g, 0,
           (ARRAY['ollama','gemini','claude','nemotron'])[1 + g % 4], 'm' || (g % 3),
           100 + g % 500, 50 + g % 200, 50 + (g * 7919) % 3000,
           g % 20 <> 0, CASE WHEN g % 20 = 0 THEN 'error' ELSE 'ok' END,
           (g % 5 = 0)::int, 0.000150,
           :start + ((g - 1) * (:days * 86400.0 / :n)) * interval '1 second', :seq
    FROM generate_series(1::bigint, :n) AS g
    """
)


def _load(engine: Engine, n: int, first: date, days: int) -> float:
    start, _ = day_range(first, ZONE)
    began = time.perf_counter()
    empty_ledger(engine)
    with engine.begin() as conn:
        # Numbered as a drain numbers what it stores (aipool.ledger.usage_log): the roll-up finds
        # the rows pending, rolls them up once, and never rewrites them. Rows left unnumbered
        # would each be rewritten by the first roll-up (as those of a writer that bypassed the
        # drain are), which doubles the heap and scatters the day: it measured 11.6x here.
        seq, _ = take_clock(conn)
        conn.execute(_LOAD, {"tag": "b", "start": start, "days": days, "n": n, "seq": seq})
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


#: The most a day's roll-up over the big table may take, as a multiple of the small table's.
ROLLUP_RATIO = 2.0


def measure(quick: bool = False) -> dict[str, Any]:
    """Roll-up milliseconds of one day over a small and a big ledger table, with their plans."""
    from aipool.ledger.testing import scratch_database
    from bench.environment import BENCH_DATABASE, BENCH_PG_SERVER

    engine = make_engine(scratch_database(BENCH_DATABASE, server=BENCH_PG_SERVER))
    big_rows, big_days = (100_000, 10) if quick else (1_000_000, 100)
    first_day = MEASURED_DAY - timedelta(days=big_days // 2)
    try:
        load_small = _load(engine, 10_000, MEASURED_DAY, 1)
        small_s, small_day = _time_rollup(engine)
        small_plan = _plan(engine)
        load_big = _load(engine, big_rows, first_day, big_days)
        big_s, big_day = _time_rollup(engine)
        big_plan = _plan(engine)
        empty_ledger(engine)
    finally:
        engine.dispose()
    return {
        "small_rows": 10_000,
        "small_day_rows": small_day,
        "small_ms": small_s * 1000,
        "small_load_s": load_small,
        "small_plan": small_plan[:60],
        "big_rows": big_rows,
        "big_day_rows": big_day,
        "big_ms": big_s * 1000,
        "big_load_s": load_big,
        "big_plan": big_plan[:60],
    }


def figures(report: Any, quick: bool = False) -> None:
    """Add the roll-up figures to a ``bench.figures.Report``."""
    from bench.figures import Figure

    m = measure(quick)
    ratio = m["big_ms"] / m["small_ms"]
    report.add(
        Figure(
            "scale",
            f"roll-up of one day over {m['big_rows']:,} ledger rows",
            m["big_ms"],
            "ms",
            f"≤ {ROLLUP_RATIO}x the {m['small_rows']:,}-row table",
            ratio <= ROLLUP_RATIO,
            m["small_ms"],
            f"{m['small_rows']:,} rows",
            {**m, "ratio": ratio},
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100,000 rows instead of 1,000,000")
    args = parser.parse_args()
    m = measure(args.quick)
    print(f"roll-up of {MEASURED_DAY} ({ZONE}), median of {RUNS} runs, PostgreSQL")
    print(f"{'table rows':>12} {'rows that day':>14} {'roll-up ms':>11} {'load s':>7}  plan")
    for size in ("big", "small"):
        print(
            f"{m[size + '_rows']:>12,} {m[size + '_day_rows']:>14,} {m[size + '_ms']:>11.1f} "
            f"{m[size + '_load_s']:>7.1f}  {m[size + '_plan']}"
        )
    print(f"ratio big/small: {m['big_ms'] / m['small_ms']:.2f}x")


if __name__ == "__main__":
    main()
