"""The comparison with plain Celery: its baseline imports nothing of the pool, its blocks take
turns, and its interval brackets the difference it reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.latency import SIMPLE
from bench.plain import (
    THROUGHPUT_RATIO,
    URGENT,
    alternating,
    difference_ci,
    in_blocks,
    ratio_figure,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_plain_baseline_imports_nothing_of_the_pool() -> None:
    # Given the plain Celery app and its task, imported in a fresh interpreter
    script = (
        "import sys, bench.plain_app\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aipool', 'workers', 'tasks',"
        " 'celeryconfig')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # Then none of the pool's modules is loaded: none of its settings or signals is in its figures
    assert out.stdout.strip() == "[]"


def test_kinds_take_turns_in_blocks_and_the_first_of_each_block_is_dropped() -> None:
    # Given two kinds of request that note when they run
    ran: list[str] = []
    paths = {"pool": lambda: ran.append("pool"), "plain": lambda: ran.append("plain")}
    # When 5 of each are measured in blocks of 2, after a warm-up of 1 each
    samples = in_blocks(paths, n=5, block=2, warmup=1)
    # Then each has 5 samples, and they ran in turns: block after block, one more per block
    assert {name: len(kept) for name, kept in samples.items()} == {"pool": 5, "plain": 5}
    assert (
        ran == ["pool", "plain"] + (["pool"] * 3 + ["plain"] * 3) * 2 + ["pool"] * 2 + ["plain"] * 2
    )


def test_the_interval_brackets_a_clear_difference_and_spans_zero_for_none() -> None:
    # Given a side 2 ms slower than the other, with the same spread
    plain = [10.0 + (i % 7) * 0.1 for i in range(200)]
    pool = [x + 2.0 for x in plain]
    # Then the difference's interval brackets 2 ms and excludes 0
    low, high = difference_ci(pool, plain)
    assert low <= 2.0 <= high and low > 0
    # And two sides drawn alike have an interval that holds 0
    low, high = difference_ci(plain, list(reversed(plain)))
    assert low <= 0.0 <= high


def test_with_lanes_each_send_alternates_routine_and_urgent() -> None:
    # Given a send that notes whether it was urgent
    sent: list[bool] = []
    # When it is called four times with lanes, and twice without
    with_lanes = alternating(sent.append, lanes=True)
    for _ in range(4):
        with_lanes()
    without = alternating(sent.append, lanes=False)
    without()
    without()
    # Then the lanes take turns, and without lanes every request is routine
    assert sent == [False, True, False, True, False, False]


def test_the_urgent_request_is_the_routine_one_with_a_deadline_that_makes_it_urgent() -> None:
    from aipool.contract.request import parse_request
    from aipool.lanes import is_urgent

    # The spread figures' urgent half differs from the routine half only by its deadline
    assert {k: v for k, v in URGENT.items() if k != "deadline_s"} == SIMPLE
    assert is_urgent(parse_request(URGENT), "GENERAL", "normal")
    assert not is_urgent(parse_request(SIMPLE), "GENERAL", "normal")


def test_the_throughput_figure_takes_each_sides_best_round_and_holds_the_ratio_to_target() -> None:
    # Given the pool's rounds and plain Celery's
    figure = ratio_figure("scaleout", "throughput", [80.0, 90.0], [100.0, 95.0], n=500)
    # Then the best rounds are compared: 0.90x meets the 0.85x target
    assert (figure.value, figure.baseline, figure.details["ratio"]) == (90.0, 100.0, 0.9)
    assert figure.met is True and figure.target == f"≥ {THROUGHPUT_RATIO}x plain"
    assert figure.baseline_name == "plain Celery; pool/plain 0.90x"
    # and 0.80x does not
    assert ratio_figure("scaleout", "throughput", [80.0], [100.0], n=500).met is False
