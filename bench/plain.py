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
import random
import statistics
from collections.abc import Callable, Iterator
from typing import Any

from aipool.harness.worker import Worker
from bench.environment import Pool
from bench.figures import Figure, Report, p50, p99, percentile
from bench.latency import SIMPLE, TIMEOUT_S, bare, by_name, timed

#: The issue's targets (#23): added at p50 by name and through submit(), with events on / off.
BY_NAME_P50_MS = {True: 1.5, False: 2.5}
SUBMIT_P50_MS = {True: 1.0, False: 2.0}
P99_MS = 5.0
THROUGHPUT_RATIO = 0.8


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
def plain_worker(pool: Pool, concurrency: int, events: bool, **env: str) -> Iterator[Worker]:
    """A ``celery -A bench.plain_app worker`` serving both plain queues (``env``: more
    environment)."""
    from bench.plain_app import EVENTS_ENV, FIRST, SECOND
    from bench.plain_app import app as plain

    worker = Worker(
        pool.worker_env(**{EVENTS_ENV: "1" if events else "0"}, **env),
        queues=(FIRST, SECOND),
        concurrency=concurrency,
        app="bench.plain_app",
    )
    try:
        worker.wait_ready(plain, timeout=60)
        yield worker
    finally:
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
def side_by_side(pool: Pool, concurrency: int, events: bool, **env: str) -> Iterator[None]:
    """The pool's worker and the plain one, task events ``events`` in both, producers included
    (``env``: more environment for both workers)."""
    from bench.plain_app import app as plain
    from bench.plain_app import configure

    configure(plain, events)
    pool.app.conf.task_send_sent_event = events
    with (
        pool.workers(
            1, concurrency=concurrency, env={"AIPOOL_TASK_EVENTS": "1" if events else "0", **env}
        ),
        plain_worker(pool, concurrency, events, **env),
    ):
        pool.reset_guards("ollama", "gemini")
        pool.warm("ollama", copies=2 * concurrency)
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

    for events in (False, True):
        with side_by_side(pool, concurrency, events):
            samples = in_blocks(
                {
                    "by_name": lambda: by_name(pool, SIMPLE),
                    "plain_2hop": lambda: plain_request(2),
                    "same_app_2hop": lambda: bare(pool, "router", ["ollama"]),
                    "submit": lambda: submit(SIMPLE, app=pool.app).get(timeout=TIMEOUT_S),
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
        ):
            report.add(figure)
        for figure in added(
            f"submit() → ollama vs plain Celery 1 hop + SDK call, {where}",
            samples["submit"],
            samples["plain_1hop"],
            samples["same_app_1hop"],
            SUBMIT_P50_MS[events],
        ):
            report.add(figure)
        report.add(
            Figure(
                "plain",
                f"direct SDK call to the simulated Ollama, p50, {where}",
                p50(samples["sdk"]),
                "ms",
                details={"p95_ms": p95(samples["sdk"]), "p99_ms": p99(samples["sdk"]), "n": n},
            )
        )


def throughput(pool: Pool, report: Report, n: int, rounds: int, where: str) -> None:
    """Requests per second by name and through ``submit()`` against plain Celery's two hops and
    one hop: ``n`` sent as fast as one producer can, until the last answer; the kinds take
    turns, and the best of ``rounds`` rounds of each counts."""
    from bench.load import rate
    from bench.plain_app import FIRST, SECOND, TASK_NAME
    from bench.plain_app import app as plain
    from tasks.client import submit

    def plain_send(queue: str) -> Any:
        return plain.send_task(
            TASK_NAME,
            kwargs={"request": SIMPLE, "second": queue == SECOND},
            queue=queue,
            routing_key=queue,
        )

    paths: dict[str, Callable[[], Any]] = {
        "by_name": lambda: pool.app.send_task(
            "ai.generate", kwargs={"request": SIMPLE}, queue="router"
        ),
        "plain_2hop": lambda: plain_send(FIRST),
        "submit": lambda: submit(SIMPLE, app=pool.app),
        "plain_1hop": lambda: plain_send(SECOND),
    }
    rates: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, send in paths.items():
            rates[name].append(rate(send, n))
    for mine, theirs, label in (
        ("by_name", "plain_2hop", "by name vs plain Celery 2 hops"),
        ("submit", "plain_1hop", "submit() vs plain Celery 1 hop"),
    ):
        ratio = max(rates[mine]) / max(rates[theirs])
        report.add(
            Figure(
                "plain",
                f"throughput, {label}, {where}",
                max(rates[mine]),
                "req/s",
                f"≥ {THROUGHPUT_RATIO}x plain",
                ratio >= THROUGHPUT_RATIO,
                max(rates[theirs]),
                "plain Celery",
                {"ratio": ratio, "n": n, "rounds": rates[mine], "plain_rounds": rates[theirs]},
            )
        )


def added(
    name: str,
    pool_ms: list[float],
    plain_ms: list[float],
    same_app_ms: list[float],
    p50_target: float,
) -> list[Figure]:
    """What the pool adds over plain Celery at p50 (with its interval) and at p99."""
    low, high = difference_ci(pool_ms, plain_ms)
    details = {
        "pool_p50_ms": p50(pool_ms),
        "pool_p95_ms": p95(pool_ms),
        "pool_p99_ms": p99(pool_ms),
        "plain_p50_ms": p50(plain_ms),
        "plain_p95_ms": p95(plain_ms),
        "plain_p99_ms": p99(plain_ms),
        "added_p50_ci95_ms": [low, high],
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
            f"≤ {p50_target} ms",
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
            f"≤ {P99_MS} ms",
            at99 <= P99_MS,
            p99(plain_ms),
            "plain Celery p99",
            details,
        ),
    ]


def network(pool: Pool, report: Report, n: int, block: int, delay_ms: float = 0.5) -> None:
    """By name against plain Celery's two hops with Redis a network away: every worker's Redis
    command held ``delay_ms`` by :mod:`bench.delay_proxy`, and so the producer's, which is a
    plain Celery app for both (the pool is sent ``ai.generate`` by name, as by a producer that
    does not import it). The time added, divided by what one round trip through the proxy costs
    (a ``PING``), is the round trips the pool adds per request."""
    from urllib.parse import urlsplit, urlunsplit

    import redis
    from celery import Celery

    from bench import delay_proxy
    from bench.environment import BENCH_REDIS_URL
    from bench.plain_app import FIRST, TASK_NAME, configure

    direct = urlsplit(BENCH_REDIS_URL)
    with delay_proxy.started(f"{direct.hostname}:{direct.port or 6379}", delay_ms) as port:
        url = urlunsplit(direct._replace(netloc=f"{direct.hostname}:{port}"))
        per_trip = _ping_ms(redis.Redis.from_url(url)) - _ping_ms(pool.redis)
        producer = Celery("network-producer", broker=url, backend=url)
        configure(producer, True)
        env = {"REDIS_URL": url, "CELERY_BROKER_URL": url, "CELERY_RESULT_BACKEND": url}

        def send(name: str, queue: str, **kwargs: Any) -> Any:
            return producer.send_task(
                name, kwargs={"request": SIMPLE, **kwargs}, queue=queue, routing_key=queue
            ).get(timeout=TIMEOUT_S)

        try:
            with side_by_side(pool, 1, True, **env):
                samples = in_blocks(
                    {
                        "by_name": lambda: send("ai.generate", "router"),
                        "plain_2hop": lambda: send(TASK_NAME, FIRST),
                    },
                    n,
                    block,
                )
        finally:
            producer.close()
    at50 = p50(samples["by_name"]) - p50(samples["plain_2hop"])
    low, high = difference_ci(samples["by_name"], samples["plain_2hop"])
    report.add(
        Figure(
            "network",
            f"by name vs plain Celery 2 hops, {delay_ms:g} ms added to every Redis command: "
            "added at p50",
            at50,
            "ms",
            "≤ 1.2 ms (2 round trips)",
            at50 <= 1.2,
            p50(samples["plain_2hop"]),
            "plain Celery p50",
            {
                "pool_p50_ms": p50(samples["by_name"]),
                "pool_p99_ms": p99(samples["by_name"]),
                "plain_p50_ms": p50(samples["plain_2hop"]),
                "plain_p99_ms": p99(samples["plain_2hop"]),
                "added_p50_ci95_ms": [low, high],
                "round_trip_through_proxy_ms": per_trip,
                "round_trips_added": at50 / per_trip if per_trip > 0 else None,
                "n": len(samples["by_name"]),
            },
        )
    )


def _ping_ms(client: Any, n: int = 300) -> float:
    """The median ``PING`` round trip of ``client``, in ms."""
    client.ping()
    return statistics.median(timed(client.ping) for _ in range(n))
