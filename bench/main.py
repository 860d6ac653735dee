"""``bench/run``: every figure of the pool next to its baseline, measured in one run.

Prints one JSON line per figure as it is measured, then a table of every figure with its target
and whether it is met. ``--quick`` runs every figure at small N (about a minute); the full run
takes a few minutes. Runs against Redis db 14 (``AIPOOL_BENCH_REDIS_URL``), which it empties, the
PostgreSQL database ``aipool_bench`` (``AIPOOL_BENCH_DATABASE``), whose ledger tables it empties,
and loopback simulators of every provider; it starts and stops its own worker processes.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console

from bench.done_when import verdicts
from bench.environment import stop_on_sigterm
from bench.figures import Figure, Report

GROUPS = (
    "cpu",
    "plain",
    "network",
    "scaleout",
    "overhead",
    "skip",
    "failover",
    "scale",
    "throughput",
    "outage",
    "quota",
    "memory",
)


@dataclass(frozen=True)
class Sizes:
    """How many requests each figure sends."""

    latency: int
    throughput: int
    rounds: int
    outage_s: float
    scale: tuple[int, ...]
    cpu_runs: int
    #: Round trips per kind against plain Celery, in blocks of ``plain_block``, at each
    #: concurrency of ``plain_concurrency``.
    plain: int
    plain_block: int
    plain_concurrency: tuple[int, ...]
    #: Requests of each kind whose Redis commands are counted (MONITOR), Redis a network away.
    counted: int


QUICK = Sizes(
    latency=40,
    throughput=100,
    rounds=1,
    outage_s=3.0,
    scale=(10, 1_000, 10_000),
    cpu_runs=15,
    plain=20,
    plain_block=10,
    plain_concurrency=(1,),
    counted=20,
)
FULL = Sizes(
    latency=300,
    throughput=500,
    rounds=2,
    outage_s=5.0,
    scale=(10, 1_000, 100_000),
    cpu_runs=101,
    plain=400,
    plain_block=20,
    plain_concurrency=(1, 4),
    counted=50,
)


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    import celery
    import kombu
    import redis

    try:
        server = redis.Redis.from_url(_redis_url()).info("server")["redis_version"]
    except redis.RedisError:
        server = "?"
    cpu = "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in info if ln.startswith("model name")), "?"
            )
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "cpus": str(_cpus()),
        "cpu": cpu,
        "redis_server": server,
        "celery": celery.__version__,
        "kombu": kombu.__version__,  # type: ignore[attr-defined]  # celery-types' stub has no __version__
        "redis_py": redis.__version__,
        "commit": _commit(),
    }


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


def _redis_url() -> str:
    from bench.environment import BENCH_REDIS_URL

    return BENCH_REDIS_URL


def _commit() -> str:
    """HEAD's short hash, with ``+changes`` when tracked files differ from it (other than the
    page and JSON ``--write`` rewrites): the figures then belong to no commit exactly."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    written = {"docs/benchmarks.json", "docs/benchmarks.md"}
    return head + ("+changes" if any(line[3:] not in written for line in changed) else "")


def _progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(groups: tuple[str, ...], quick: bool) -> Report:
    """Measure ``groups`` and return the report (the JSON lines are printed as they come)."""
    from bench import bench_rollup, cpu, latency, load, memory, network, plain
    from bench.environment import prepare

    sizes = QUICK if quick else FULL
    report = Report()
    if "cpu" in groups:
        _progress("cpu")
        cpu.cpu(report, sizes.cpu_runs)
    pool_groups = set(groups) - {"cpu"}
    if not pool_groups:
        return report
    pool = prepare(quick)
    try:
        if "plain" in pool_groups:
            for concurrency in sizes.plain_concurrency:
                _progress(f"against plain Celery, -c {concurrency}")
                plain.latency(
                    pool,
                    report,
                    sizes.plain,
                    sizes.plain_block,
                    concurrency,
                    throughput_n=sizes.throughput,
                    rounds=sizes.rounds,
                )
        if "network" in pool_groups:
            _progress("Redis a network away (0.5 ms per command)")
            network.network(pool, report, sizes.plain, sizes.plain_block, counted=sizes.counted)
        if "scaleout" in pool_groups:
            _progress(f"throughput, {plain.SPREAD_WORKERS} worker processes on 4 queues")
            plain.spread(pool, report, sizes.throughput, sizes.rounds)
        # Back to the pool's defaults for the other groups.
        pool.app.conf.task_send_sent_event = True
        steps: list[tuple[str, Callable[[], None]]] = []
        latency_steps: list[tuple[str, Callable[[], None]]] = [
            ("overhead", lambda: latency.overhead(pool, report, sizes.latency)),
            ("skip", lambda: latency.skip(pool, report, sizes.latency // 2)),
            ("failover", lambda: latency.failover(pool, report, sizes.latency // 2)),
            ("scale", lambda: latency.scale(pool, report, sizes.latency // 4, sizes.scale)),
        ]
        wanted = [step for step in latency_steps if step[0] in pool_groups]
        if wanted:
            with pool.workers(1, concurrency=1):
                for name, step in wanted:
                    _progress(name)
                    step()
        if "throughput" in pool_groups:
            for processes in (1, 2):
                _progress(f"throughput, {processes} process(es)")
                with pool.workers(1, concurrency=processes):
                    load.throughput(pool, report, sizes.throughput, processes, sizes.rounds)
        if "outage" in pool_groups:
            steps.append(("outage", lambda: load.blast_radius(pool, report, sizes.outage_s, 2, 4)))
        if "quota" in pool_groups:
            steps.append(("quota", lambda: load.quota(pool, report, 2, 4, quick)))
        if "memory" in pool_groups:
            steps.append(("memory", lambda: memory.memory(pool, report)))
        if "scale" in pool_groups:
            steps.append(("rollup", lambda: bench_rollup.figures(report, quick)))
        for name, step in steps:
            _progress(name)
            step()
    finally:
        pool.simulator.stop()
        pool.redis.flushdb()
        pool.redis.close()
    return report


def profile_only(runs: int) -> int:
    """``--profile``: the cost table of one request, and the round trips real workers make."""
    from bench import costs
    from bench.environment import prepare

    pool = prepare(quick=True)
    try:
        table = costs.profile(pool, runs)
        costs.print_table(table, sys.stdout)
        trips = costs.round_trips_with_workers(pool, 50)
        costs.print_round_trips(trips, sys.stdout)
    finally:
        pool.simulator.stop()
        pool.redis.flushdb()
        pool.redis.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/run", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every figure at small N: a smoke run of a minute or two",
    )
    parser.add_argument(
        "--only",
        default=",".join(GROUPS),
        help=f"comma-separated groups to run (default all: {','.join(GROUPS)})",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print where the pool's added time goes, step by step (bench/costs.py), and stop",
    )
    parser.add_argument(
        "--write",
        action="store_true",
        help="keep the run in docs/benchmarks.json and its tables in docs/benchmarks.md (the "
        "groups run replace theirs; the others' figures stay, each with its own commit)",
    )
    args = parser.parse_args(argv)
    stop_on_sigterm()
    if args.write:
        from bench import page

        page.check()
    if args.profile:
        return profile_only(300 if not args.quick else 40)
    groups = tuple(g.strip() for g in args.only.split(",") if g.strip())
    unknown = set(groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown group(s): {', '.join(sorted(unknown))}")
    started = time.monotonic()
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    info = machine()
    print(Figure("machine", "machine", 0, "", details=info).to_json(), flush=True)
    report = run(groups, args.quick)
    console = Console(file=sys.stdout, width=160)
    report.table(console)
    console.print("Issue #44, done when:", highlight=False)
    for line in verdicts([figure.to_dict() for figure in report.figures]):
        console.print(f"  {line}", highlight=False, markup=False)
    console.print(
        f"{'quick' if args.quick else 'full'} run, {time.monotonic() - started:.0f} s, "
        + ", ".join(f"{k} {v}" for k, v in info.items())
    )
    if args.write:
        from bench import page

        run_info = {
            "date": date,
            "quick": args.quick,
            "groups": list(groups),
            "duration_s": round(time.monotonic() - started),
            "load_average": load,
            "machine": info,
        }
        page.write(report, run_info)
        console.print(f"written: {page.JSON_PATH}, {page.PAGE_PATH}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
