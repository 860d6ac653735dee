"""The pool against plain Celery: what a team pays for the pool over twenty lines of its own.

The baseline is :mod:`bench.plain_app`, a Celery app that imports nothing of the pool, on the same
Redis, with late acks, prefetch 1 and the same concurrency. Two runs: plain Celery with its
defaults (no task events) against the pool with ``AIPOOL_TASK_EVENTS=0``, and both with task
events on, as Flower needs them. The pool's own baseline (``bench.hop`` on the pool's app, the
same consumer, settings and result backend) is measured alongside as a third column: the pool's
own logic alone.

Both workers run at once, each on its own queues, and the kinds of request take turns in blocks
(the first request of each block is dropped: it may meet the other worker's last one finishing),
so load from other processes on the machine falls on every side alike. Each difference at p50 is
given with a 95% bootstrap confidence interval.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import statistics
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from aipool.harness.worker import Worker
from bench.environment import Pool, lanes_of
from bench.figures import Figure, Report, p50, p99, percentile
from bench.latency import SIMPLE, TIMEOUT_S, bare, by_name, fresh_request, timed
from bench.load import rate

#: Issue #44's targets: by name at or below plain Celery's two hops; submit() at most 1.5 ms over
#: its one hop with task events on, 2.0 ms with Celery's defaults, 4 ms at p99; throughput at
#: least 0.85x. By name's p99 keeps issue #23's 5 ms (#44 sets none).
BY_NAME_P50_MS = {True: 0.0, False: 0.0}
SUBMIT_P50_MS = {True: 1.5, False: 2.0}
BY_NAME_P99_MS = 5.0
SUBMIT_P99_MS = 4.0
THROUGHPUT_RATIO = 0.85
#: An urgent request of the same kind: its deadline puts it in the urgent lanes (aipool.lanes).
URGENT = {**SIMPLE, "deadline_s": 30}


def p95(samples: list[float]) -> float:
    """The 95th percentile."""
    return percentile(samples, 0.95)


def difference_ci(
    pool_ms: list[float], plain_ms: list[float], q: float = 0.5, rounds: int = 1000
) -> tuple[float, float]:
    """A 95% bootstrap confidence interval of ``q``-quantile(pool) − ``q``-quantile(plain).

    Each side is resampled on its own (the samples are not paired), ``rounds`` times, with a
    fixed seed so a run's interval can be reproduced from its samples.
    """
    rng = random.Random(23)
    differences = sorted(
        _quantile(rng.choices(pool_ms, k=len(pool_ms)), q)
        - _quantile(rng.choices(plain_ms, k=len(plain_ms)), q)
        for _ in range(rounds)
    )
    return differences[int(0.025 * rounds)], differences[int(0.975 * rounds) - 1]


def _quantile(samples: list[float], q: float) -> float:
    return statistics.median(samples) if q == 0.5 else percentile(samples, q)


def in_blocks(
    paths: dict[str, Callable[[], Any]], n: int, block: int, warmup: int = 10
) -> dict[str, list[float]]:
    """``n`` round trips of every path, the paths taking turns in blocks of ``block``.

    The first round trip of each block is run but not kept: it may overlap the previous path's
    worker finishing its last request (events, acks) after its producer had the answer.
    """
    for call in paths.values():
        for _ in range(warmup):
            call()
    samples: dict[str, list[float]] = {name: [] for name in paths}
    while any(len(kept) < n for kept in samples.values()):
        for name, call in paths.items():
            call()
            for _ in range(min(block, n - len(samples[name]))):
                samples[name].append(timed(call))
    return samples


@contextlib.contextmanager
def plain_worker(
    pool: Pool,
    concurrency: int,
    events: bool,
    count: int = 1,
    lanes: bool = False,
    env: Mapping[str, str] | None = None,
) -> Iterator[list[Worker]]:
    """``count`` ``celery -A bench.plain_app worker`` processes serving both plain queues, and
    their urgent twins when ``lanes`` (``env``: more environment)."""
    from bench.plain_app import EVENTS_ENV, FIRST, FIRST_URGENT, SECOND, SECOND_URGENT
    from bench.plain_app import app as plain

    queues = (FIRST, SECOND, FIRST_URGENT, SECOND_URGENT) if lanes else (FIRST, SECOND)
    started: list[Worker] = []
    try:
        for _ in range(count):
            started.append(
                Worker(
                    pool.worker_env(**{EVENTS_ENV: "1" if events else "0"}, **(env or {})),
                    queues=queues,
                    concurrency=concurrency,
                    app="bench.plain_app",
                )
            )
        for worker in started:
            worker.wait_ready(plain, timeout=60)
        yield started
    finally:
        for worker in started:
            worker.stop()


def plain_request(hops: int) -> Any:
    """``plain.generate`` sent to its first queue (two hops) or straight to its second (one)."""
    from bench.plain_app import FIRST, SECOND, TASK_NAME
    from bench.plain_app import app as plain

    queue = FIRST if hops == 2 else SECOND
    result = plain.send_task(
        TASK_NAME,
        kwargs={"request": SIMPLE, "second": hops == 1},
        queue=queue,
        routing_key=queue,
    )
    return result.get(timeout=TIMEOUT_S)


def mode_name(events: bool) -> str:
    """How a run's task events are set, in a figure's name."""
    return "task events on" if events else "Celery's defaults (no task events)"


@contextlib.contextmanager
def side_by_side(
    pool: Pool,
    concurrency: int,
    events: bool,
    count: int = 1,
    lanes: bool = False,
    env: Mapping[str, str] | None = None,
) -> Iterator[None]:
    """``count`` of the pool's workers and as many plain ones, task events ``events`` in both,
    producers included; with ``lanes``, every worker serves the urgent lanes too (``env``: more
    environment for both sides' workers)."""
    from bench.plain_app import app as plain
    from bench.plain_app import configure

    configure(plain, events)
    pool.app.conf.task_send_sent_event = events
    queues: tuple[str, ...] = ("router", "ollama", "gemini")
    if lanes:
        queues = tuple(lane for queue in ("router", "ollama") for lane in lanes_of(queue))
    with (
        pool.workers(
            count,
            queues=queues,
            concurrency=concurrency,
            env={"AIPOOL_TASK_EVENTS": "1" if events else "0", **(env or {})},
        ),
        plain_worker(pool, concurrency, events, count, lanes, env),
    ):
        pool.reset_guards("ollama", "gemini")
        pool.warm("ollama", copies=2 * concurrency * count)
        yield


def latency(
    pool: Pool,
    report: Report,
    n: int,
    block: int,
    concurrency: int,
    throughput_n: int = 0,
    rounds: int = 1,
) -> None:
    """By name and through ``submit()``, against plain Celery's two hops and one hop, both modes;
    then, when ``throughput_n``, their throughput on the same workers."""
    from bench.sdk_calls import call_ollama
    from tasks.client import submit

    fresh = map(fresh_request, itertools.count())
    for events in (False, True):
        with side_by_side(pool, concurrency, events):
            samples = in_blocks(
                {
                    "by_name": lambda: by_name(pool, SIMPLE),
                    "plain_2hop": lambda: plain_request(2),
                    "same_app_2hop": lambda: bare(pool, "router", ["ollama"]),
                    "submit": lambda: submit(SIMPLE, app=pool.app).get(timeout=TIMEOUT_S),
                    "submit_new": lambda: submit(next(fresh), app=pool.app).get(timeout=TIMEOUT_S),
                    "plain_1hop": lambda: plain_request(1),
                    "same_app_1hop": lambda: bare(pool, "ollama", []),
                    "sdk": call_ollama,
                },
                n,
                block,
            )
            where = f"{mode_name(events)}, -c {concurrency}"
            if throughput_n:
                throughput(pool, report, throughput_n, rounds, where)
        for figure in added(
            f"by name → router → ollama vs plain Celery 2 hops + SDK call, {where}",
            samples["by_name"],
            samples["plain_2hop"],
            samples["same_app_2hop"],
            BY_NAME_P50_MS[events],
            BY_NAME_P99_MS,
        ):
            report.add(figure)
        for figure in added(
            f"submit() → ollama vs plain Celery 1 hop + SDK call, {where}",
            samples["submit"],
            samples["plain_1hop"],
            samples["same_app_1hop"],
            SUBMIT_P50_MS[events],
            SUBMIT_P99_MS,
        ):
            report.add(figure)
        # The rows above repeat one prompt, whose route a worker recalls after its first request;
        # one it has not seen is decided again there (docs/routing.md): context, no target.
        report.add(
            Figure(
                "plain",
                f"submit() → ollama, a new prompt each request, vs plain Celery 1 hop + SDK call, "
                f"{where}: added at p50",
                p50(samples["submit_new"]) - p50(samples["plain_1hop"]),
                "ms",
                baseline=p50(samples["plain_1hop"]),
                baseline_name="plain Celery 1 hop + SDK call p50",
                details={
                    "pool_p50_ms": p50(samples["submit_new"]),
                    "pool_p99_ms": p99(samples["submit_new"]),
                    "n": len(samples["submit_new"]),
                },
            )
        )
        report.add(
            Figure(
                "plain",
                f"direct SDK call to the simulated Ollama, p50, {where}",
                p50(samples["sdk"]),
                "ms",
                details={"p95_ms": p95(samples["sdk"]), "p99_ms": p99(samples["sdk"]), "n": n},
            )
        )


def throughput(
    pool: Pool,
    report: Report,
    n: int,
    rounds: int,
    where: str,
    lanes: bool = False,
    group: str = "plain",
) -> None:
    """Requests per second by name and through ``submit()`` against plain Celery's two hops and
    one hop: ``n`` sent as fast as one producer can, until the last answer; the kinds take
    turns, and the best of ``rounds`` rounds of each counts. With ``lanes``, every other request
    is urgent (:data:`URGENT`), so the routine and urgent lanes of every queue carry work."""
    paths = senders(pool, lanes)
    rates: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, send in paths.items():
            rates[name].append(rate(send, n))
    for mine, theirs, label in (
        ("by_name", "plain_2hop", "by name vs plain Celery 2 hops"),
        ("submit", "plain_1hop", "submit() vs plain Celery 1 hop"),
    ):
        report.add(
            ratio_figure(group, f"throughput, {label}, {where}", rates[mine], rates[theirs], n)
        )


#: Worker processes of each side in the figures of many workers on many queues.
SPREAD_WORKERS = 4


def spread(pool: Pool, report: Report, n: int, rounds: int) -> None:
    """Throughput with :data:`SPREAD_WORKERS` worker processes (``-c 1`` each) a side, every one
    serving four queues (the pool: ``router``, ``ollama`` and their urgent lanes; plain Celery:
    its two queues and their urgent twins), every other request urgent; both task-event modes.
    The pool routes an urgent request (it has a deadline) in full at ``submit()``, as it would
    in production."""
    for events in (False, True):
        with side_by_side(pool, 1, events, count=SPREAD_WORKERS, lanes=True):
            paths = senders(pool, lanes=True)
            for send in paths.values():  # every process imports its SDK, both lanes warm
                rate(send, 4 * SPREAD_WORKERS)
            throughput(
                pool,
                report,
                n,
                rounds,
                f"{mode_name(events)}, {SPREAD_WORKERS} worker processes (-c 1) on 4 queues",
                lanes=True,
                group="scaleout",
            )


def senders(pool: Pool, lanes: bool = False) -> dict[str, Callable[[], Any]]:
    """Each kind's send, without waiting for its answer; with ``lanes``, each send alternates
    between a routine request and an urgent one (both sides: the pool's urgent lanes, plain
    Celery's urgent twins)."""
    from bench.plain_app import FIRST, FIRST_URGENT, SECOND, SECOND_URGENT, TASK_NAME
    from bench.plain_app import app as plain
    from tasks.client import submit

    def plain_send(urgent: bool, hops: int) -> Any:
        first, second = (FIRST_URGENT, SECOND_URGENT) if urgent else (FIRST, SECOND)
        queue = first if hops == 2 else second
        return plain.send_task(
            TASK_NAME,
            kwargs={"request": SIMPLE, "second": hops == 1, "then": second},
            queue=queue,
            routing_key=queue,
        )

    kinds: dict[str, Callable[[bool], Any]] = {
        "by_name": lambda urgent: pool.app.send_task(
            "ai.generate",
            kwargs={"request": URGENT if urgent else SIMPLE},
            queue="router.urgent" if urgent else "router",
        ),
        "plain_2hop": lambda urgent: plain_send(urgent, 2),
        "submit": lambda urgent: submit(URGENT if urgent else SIMPLE, app=pool.app),
        "plain_1hop": lambda urgent: plain_send(urgent, 1),
    }
    return {name: alternating(send, lanes) for name, send in kinds.items()}


def alternating(send: Callable[[bool], Any], lanes: bool) -> Callable[[], Any]:
    """``send`` called with ``urgent`` False, then True, in turn when ``lanes``; else always
    False."""
    turn = itertools.cycle((False, True) if lanes else (False,))
    return lambda: send(next(turn))


def ratio_figure(group: str, name: str, mine: list[float], theirs: list[float], n: int) -> Figure:
    """The best round of the pool's requests per second against plain Celery's best, with the
    throughput target."""
    ratio = max(mine) / max(theirs)
    return Figure(
        group,
        name,
        max(mine),
        "req/s",
        f"≥ {THROUGHPUT_RATIO}x plain",
        ratio >= THROUGHPUT_RATIO,
        max(theirs),
        f"plain Celery; pool/plain {ratio:.2f}x",
        {"ratio": ratio, "n": n, "rounds": mine, "plain_rounds": theirs},
    )


def both_sides(pool_ms: list[float], plain_ms: list[float]) -> dict[str, Any]:
    """Both sides' p50, p95 and p99, and the 95% interval of the difference at p50."""
    low, high = difference_ci(pool_ms, plain_ms)
    return {
        "pool_p50_ms": p50(pool_ms),
        "pool_p95_ms": p95(pool_ms),
        "pool_p99_ms": p99(pool_ms),
        "plain_p50_ms": p50(plain_ms),
        "plain_p95_ms": p95(plain_ms),
        "plain_p99_ms": p99(plain_ms),
        "added_p50_ci95_ms": [low, high],
    }


def added(
    name: str,
    pool_ms: list[float],
    plain_ms: list[float],
    same_app_ms: list[float],
    p50_target: float,
    p99_target: float,
) -> list[Figure]:
    """What the pool adds over plain Celery at p50 (with its interval) and at p99."""
    details = {
        **both_sides(pool_ms, plain_ms),
        "added_p95_ms": p95(pool_ms) - p95(plain_ms),
        "ratio_p50": p50(pool_ms) / p50(plain_ms),
        # The third column: the pool's app without the pool's logic (its consumer, settings,
        # result backend), so what the pool's own logic adds is pool − same app.
        "same_app_p50_ms": p50(same_app_ms),
        "same_app_p99_ms": p99(same_app_ms),
        "pool_logic_p50_ms": p50(pool_ms) - p50(same_app_ms),
        "n": len(pool_ms),
    }
    at50 = p50(pool_ms) - p50(plain_ms)
    at99 = p99(pool_ms) - p99(plain_ms)
    return [
        Figure(
            "plain",
            f"{name}: added at p50",
            at50,
            "ms",
            f"≤ {p50_target:g} ms",
            at50 <= p50_target,
            p50(plain_ms),
            "plain Celery p50",
            details,
        ),
        Figure(
            "plain",
            f"{name}: added at p99",
            at99,
            "ms",
            f"≤ {p99_target:g} ms",
            at99 <= p99_target,
            p99(plain_ms),
            "plain Celery p99",
            details,
        ),
    ]
