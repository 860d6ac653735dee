"""Where a hop's time goes inside real workers: the pool's stages beside plain Celery's.

Run: ``.venv/bin/python -m bench.stages [--n 400] [--events] [--fresh]``. Starts the simulator,
one pool worker and one plain Celery worker (``-c 1`` each, :mod:`bench.stage_app`, which times
each stage in the pool process), sends ``n`` requests through ``submit()`` and ``n`` one-hop
plain Celery requests, taking turns, and prints the median wall and CPU µs of each stage per
request. What the pool adds over plain Celery at one hop is the difference of the task rows, plus
the producer's routing (``submit()`` validates and routes before it sends).

Every request is the same prompt unless ``--fresh``: then each is one the worker has not seen, so
its route decision is made, not recalled (``aipool.routing.recall``), as for most of a service's
traffic.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.environment import stop_on_sigterm
from bench.stage_meter import APP_ENV, PLAIN_STAGES, POOL_STAGES, STAGES_KEY, TASK

#: The first requests of each side load the SDK and warm the process: not kept.
WARMUP = 30

#: Pairs of requests between the bench process's garbage collections (outside the timed windows).
COLLECT_EVERY = 20


def summary(rows: Iterable[dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """Median wall and CPU µs of every stage over the tasks that ran it (``rows``: one per task,
    stage → [wall s, CPU s]), with how many tasks did."""
    by_stage: dict[str, list[list[float]]] = {}
    for row in rows:
        for stage, spent in row.items():
            by_stage.setdefault(stage, []).append(spent)
    return {
        stage: {
            "wall_us": statistics.median(s[0] for s in spent) * 1e6,
            "cpu_us": statistics.median(s[1] for s in spent) * 1e6,
            "tasks": len(spent),
        }
        for stage, spent in by_stage.items()
    }


def table(pool: dict[str, dict[str, float]], plain: dict[str, dict[str, float]]) -> list[str]:
    """The lines printed: each stage of the pool's hop, and plain Celery's where it has it."""
    lines = [f"{'stage':40} {'pool wall':>10} {'pool CPU':>9} {'plain wall':>11} {'plain CPU':>10}"]
    labels = [label for label, _ in POOL_STAGES] + [TASK]
    for label in labels:
        mine, theirs = pool.get(label), plain.get(label)
        if mine is None and theirs is None:
            continue
        cells = [
            f"{row[key]:>{width}.0f}" if row else f"{'-':>{width}}"
            for row in (mine, theirs)
            for key, width in (("wall_us", 10), ("cpu_us", 9))
        ]
        lines.append(f"{label:40} {cells[0]} {cells[1]} {cells[2]:>11} {cells[3]:>10}")
    return lines


#: The processes a request's CPU is counted in, pool's and plain Celery's alike.
PROCESSES = ("producer (send and wait)", "worker parent", "worker pool process")


def process_cpu_s(pid: int) -> float:
    """User and system CPU seconds process ``pid`` has used (Linux ``/proc``), all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_request(totals: dict[str, float], n: int) -> dict[str, float]:
    """CPU µs per request of each of ``totals`` (seconds over ``n`` requests)."""
    return {name: spent / n * 1e6 for name, spent in totals.items()}


def process_table(pool: dict[str, float], plain: dict[str, float]) -> list[str]:
    """The lines printed for whole processes: CPU µs per request, the pool's beside plain's."""
    lines = [f"{'process':40} {'pool CPU':>9} {'plain CPU':>10} {'pool ÷ plain':>13}"]
    for name in (*PROCESSES, "total"):
        mine = sum(pool.values()) if name == "total" else pool[name]
        theirs = sum(plain.values()) if name == "total" else plain[name]
        ratio = f"{mine / theirs:.2f}x" if theirs else "-"
        lines.append(f"{name:40} {mine:>9.0f} {theirs:>10.0f} {ratio:>13}")
    return lines


def _run(
    n: int, events: bool, fresh: bool = False
) -> tuple[dict[str, Any], dict[str, Any], dict[str, dict[str, float]]]:
    from aipool.harness.worker import Worker
    from bench.environment import prepare
    from bench.latency import SIMPLE, TIMEOUT_S, fresh_request
    from bench.plain import plain_request
    from bench.plain_app import EVENTS_ENV, FIRST, SECOND, configure
    from bench.plain_app import app as plain

    pool = prepare(quick=True)
    configure(plain, events)
    pool.app.conf.task_send_sent_event = events
    env = {"AIPOOL_TASK_EVENTS": "1" if events else "0", EVENTS_ENV: "1" if events else "0"}
    lanes = ("ollama", "ollama.urgent")
    workers = [
        Worker(pool.worker_env(**env, **{APP_ENV: "pool"}), lanes, 1, app="bench.stage_app"),
        Worker(
            pool.worker_env(**env, **{APP_ENV: "plain"}), (FIRST, SECOND), 1, app="bench.stage_app"
        ),
    ]
    from tasks.client import submit

    try:
        workers[0].wait_ready(pool.app, timeout=60)
        workers[1].wait_ready(plain, timeout=60)
        for _ in range(WARMUP):
            submit(SIMPLE, app=pool.app).get(timeout=TIMEOUT_S)
            plain_request(1)
        pool.redis.delete(STAGES_KEY)
        sides = {
            side: {"worker parent": worker.pid, "worker pool process": worker.children()[0]}
            for side, worker in zip(("pool", "plain"), workers, strict=True)
        }
        spent = {side: dict.fromkeys(PROCESSES, 0.0) for side in sides}
        before = {
            side: {k: process_cpu_s(pid) for k, pid in p.items()} for side, p in sides.items()
        }
        # The bench process's garbage collection runs between pairs, outside both sides'
        # windows: left automatic, a collection lands in whichever side's window crosses the
        # allocation threshold, and moves there when either side's allocations change
        # (docs/benchmarks.md: 2026-12-07, late).
        collected = 0.0
        gc.disable()
        try:
            for i in range(n):
                started = time.thread_time()
                submit(fresh_request(i) if fresh else SIMPLE, app=pool.app).get(timeout=TIMEOUT_S)
                middle = time.thread_time()
                plain_request(1)
                spent["pool"][PROCESSES[0]] += middle - started
                spent["plain"][PROCESSES[0]] += time.thread_time() - middle
                if i % COLLECT_EVERY == COLLECT_EVERY - 1:
                    before_gc = time.thread_time()
                    gc.collect(1)  # the young generations, as the automatic collector mostly runs
                    collected += time.thread_time() - before_gc
        finally:
            gc.enable()
        for side, pids in sides.items():
            for name, pid in pids.items():
                spent[side][name] = process_cpu_s(pid) - before[side][name]
        rows = [json.loads(raw) for raw in pool.redis.lrange(STAGES_KEY, 0, -1)]
    finally:
        for worker in workers:
            worker.stop()
        pool.simulator.stop()
        pool.redis.flushdb()
    plain_labels = {label for label, _ in PLAIN_STAGES} | {TASK}
    # A plain task's row has no pool-only stage; every pool row has at least one.
    plain_rows = [row for row in rows if row.keys() <= plain_labels]
    pool_rows = [row for row in rows if not row.keys() <= plain_labels]
    processes = {side: per_request(totals, n) for side, totals in spent.items()}
    processes["gc"] = {PROCESSES[0]: collected / n * 1e6}
    return summary(pool_rows), summary(plain_rows), processes


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} requests measure nothing: give 1 or more")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=_positive, default=400, help="requests of each kind")
    parser.add_argument("--events", action="store_true", help="task events on, as Flower needs")
    parser.add_argument(
        "--fresh", action="store_true", help="a prompt the worker has not seen in every request"
    )
    args = parser.parse_args()
    stop_on_sigterm()
    pool, plain, processes = _run(args.n, args.events, args.fresh)
    print(
        f"one hop, -c 1, {'task events on' if args.events else 'no task events'}, "
        f"{'a new prompt each request' if args.fresh else 'one prompt repeated'}: medians of "
        f"{args.n} requests each, µs per request in the worker's pool process"
    )
    for line in table(pool, plain):
        print(line)
    print(
        "\nwhole processes, µs of CPU per request (the stage meters' own cost included; the "
        "producer's thread from send to answer)"
    )
    for line in process_table(processes["pool"], processes["plain"]):
        print(line)
    print(
        f"(the producer's young-generation garbage collections, outside both sides' windows: "
        f"{processes['gc'][PROCESSES[0]]:.0f} µs per pair of requests)"
    )


if __name__ == "__main__":
    main()
