"""Round trips, one request at a time: what the pool adds to a hop, to a skip and to a failover,
and whether requests waiting elsewhere slow a round trip down.

Every comparison is *interleaved*: the pool's request and its bare baseline take turns, so load
from other processes on the machine falls on both sides alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aipool.attempt.runner import LOOK_FRESH_S
from bench.environment import Pool
from bench.figures import Figure, Report, p50, p99

TIMEOUT_S = 30
SIMPLE = {"prompt": "What is a pod?"}
OVERHEAD_P50_MS = 1.5
OVERHEAD_P99_MS = 5.0
SKIP_RATIO = 1.1
FAILOVER_RATIO = 1.3
SCALE_RATIO = 1.1


def fresh_request(i: int) -> dict[str, Any]:
    """A short question like ``SIMPLE`` that no earlier request of the run asked: a worker decides
    its route instead of recalling it (``aipool.routing.recall``), as for most of a service's
    traffic, and it starts where ``SIMPLE`` does."""
    return {"prompt": f"What is a pod in namespace team-{i}?"}


def timed(call: Callable[[], Any]) -> float:
    """Milliseconds ``call`` takes."""
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def interleaved(
    paths: dict[str, Callable[[], Any]],
    n: int,
    warmup: int = 20,
    before: Callable[[], Any] | None = None,
) -> dict[str, list[float]]:
    """Round trips of every path, taking turns, ``n`` each after ``warmup`` each."""
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for i in range(warmup + n):
        for name, call in paths.items():
            if before is not None:
                before()
            took = timed(call)
            if i >= warmup:
                samples[name].append(took)
    return samples


def by_name(pool: Pool, request: dict[str, Any]) -> dict[str, Any]:
    """``ai.generate`` sent by name to ``router``, as a producer without aipool sends it."""
    result = pool.app.send_task("ai.generate", kwargs={"request": request}, queue="router")
    answer: dict[str, Any] = result.get(timeout=TIMEOUT_S)
    return answer


def bare(pool: Pool, first: str, then: list[str], call: bool = True) -> Any:
    """``bench.hop`` sent to ``first``, replacing itself onto each queue of ``then``."""
    result = pool.app.send_task(
        "bench.hop", kwargs={"queues": then, "call": call}, queue=first, routing_key=first
    )
    return result.get(timeout=TIMEOUT_S)


def _added(
    group: str, name: str, pool_ms: list[float], bare_ms: list[float], bare_name: str
) -> list[Figure]:
    details = {
        "pool_p50_ms": p50(pool_ms),
        "pool_p99_ms": p99(pool_ms),
        "bare_p50_ms": p50(bare_ms),
        "bare_p99_ms": p99(bare_ms),
        "n": len(pool_ms),
    }
    added50 = p50(pool_ms) - p50(bare_ms)
    added99 = p99(pool_ms) - p99(bare_ms)
    return [
        Figure(
            group,
            f"{name}: added at p50",
            added50,
            "ms",
            f"≤ {OVERHEAD_P50_MS} ms",
            added50 <= OVERHEAD_P50_MS,
            p50(bare_ms),
            f"{bare_name} p50",
            details,
        ),
        Figure(
            group,
            f"{name}: added at p99",
            added99,
            "ms",
            f"≤ {OVERHEAD_P99_MS} ms",
            added99 <= OVERHEAD_P99_MS,
            p99(bare_ms),
            f"{bare_name} p99",
            details,
        ),
    ]


def overhead(pool: Pool, report: Report, n: int) -> None:
    """The pool's hop against a bare Celery hop that makes the same SDK call."""
    from bench.sdk_calls import call_ollama
    from tasks.client import submit

    pool.reset_guards("ollama", "gemini")
    pool.warm("ollama", "gemini", copies=2)
    samples = interleaved(
        {
            "by_name": lambda: by_name(pool, SIMPLE),
            "bare_2hop": lambda: bare(pool, "router", ["ollama"]),
            "submit": lambda: submit(SIMPLE, app=pool.app).get(timeout=TIMEOUT_S),
            "bare_1hop": lambda: bare(pool, "ollama", []),
            "sdk": call_ollama,
        },
        n,
    )
    for figure in _added(
        "overhead",
        "by name → router → ollama",
        samples["by_name"],
        samples["bare_2hop"],
        "bare task router → ollama + SDK call",
    ):
        report.add(figure)
    for figure in _added(
        "overhead",
        "submit() → ollama",
        samples["submit"],
        samples["bare_1hop"],
        "bare task → ollama + SDK call",
    ):
        report.add(figure)
    report.add(
        Figure(
            "overhead",
            "direct SDK call to the simulated Ollama (p50)",
            p50(samples["sdk"]),
            "ms",
            details={"p99_ms": p99(samples["sdk"]), "n": n},
        )
    )


def _open_breaker(pool: Pool, provider: str = "ollama", tries: int = 20) -> None:
    """Take ``provider`` down and send requests until its breaker opens (its threshold's worth)."""
    pool.simulator.set_fault(provider, "down")
    for _ in range(tries):
        answer = by_name(pool, SIMPLE)
        if any(
            a["provider"] == provider and a["outcome"] == "circuit_open"
            for a in answer.get("attempts", [])
        ):
            return
    raise RuntimeError(f"the {provider} breaker did not open after {tries} requests")


def skip(pool: Pool, report: Report, n: int, block: int = 25) -> None:
    """A request whose first provider's breaker is open, against the same request when healthy.

    The breaker cannot be open and closed at once, so the two take turns in blocks: ``block``
    healthy round trips, then the breaker is opened (a dead Ollama) and ``block`` more.
    """
    healthy: list[float] = []
    skipped: list[float] = []
    bare_ollama: list[float] = []
    bare_gemini: list[float] = []
    pool.reset_guards("ollama", "gemini")
    for _ in range(3):  # warm-up: the gemini SDK client in the worker
        by_name(pool, SIMPLE)
        bare(pool, "router", ["gemini"])
    while len(healthy) < n:
        pool.simulator.heal("ollama")
        pool.reset_guards("ollama")
        # Each block starts once every process's look at the breaker has seen the change
        # (LOOK_FRESH_S): before that, a request sent by name may go on to the provider whose
        # breaker just opened and be passed over there, one hop more (the outage group counts it).
        time.sleep(LOOK_FRESH_S)
        for _ in range(block):
            healthy.append(timed(lambda: by_name(pool, SIMPLE)))
            bare_ollama.append(timed(lambda: bare(pool, "router", ["ollama"])))
        _open_breaker(pool)
        time.sleep(LOOK_FRESH_S)
        for _ in range(block):
            skipped.append(timed(lambda: by_name(pool, SIMPLE)))
            bare_gemini.append(timed(lambda: bare(pool, "router", ["gemini"])))
    pool.simulator.heal("ollama")
    pool.reset_guards("ollama")
    ratio = p50(skipped) / p50(healthy)
    # The skipped request is answered by Gemini, whose SDK costs more than Ollama's: the bare
    # hops to each provider say how much of the difference is the SDK's.
    sdk_difference = p50(bare_gemini) - p50(bare_ollama)
    report.add(
        Figure(
            "skip",
            "first breaker open: p50 / healthy p50",
            ratio,
            "x",
            f"≤ {SKIP_RATIO}x",
            ratio <= SKIP_RATIO,
            1.0,
            "healthy",
            {
                "open_p50_ms": p50(skipped),
                "healthy_p50_ms": p50(healthy),
                "open_p99_ms": p99(skipped),
                "healthy_p99_ms": p99(healthy),
                "bare_router_gemini_p50_ms": p50(bare_gemini),
                "bare_router_ollama_p50_ms": p50(bare_ollama),
                "skip_cost_net_of_sdk_ms": p50(skipped) - p50(healthy) - sdk_difference,
                "n": len(skipped),
            },
        )
    )


def failover(pool: Pool, report: Report, n: int) -> None:
    """Ollama answers 500 at call time and the request moves on to Gemini, against a bare task
    that makes the same calls and replaces itself once more."""
    pool.reset_guards("ollama", "gemini")
    pool.simulator.set_fault("ollama", "error_500")
    try:
        # The breaker is reset before every request (untimed): each one meets a failing call,
        # never an open breaker (that is the skip figure).
        samples = interleaved(
            {
                "pool": lambda: by_name(pool, SIMPLE),
                "bare": lambda: bare(pool, "router", ["ollama", "gemini"]),
            },
            n,
            before=lambda: pool.reset_guards("ollama"),
        )
    finally:
        pool.simulator.heal("ollama")
        pool.reset_guards("ollama")
    ratio = p50(samples["pool"]) / p50(samples["bare"])
    report.add(
        Figure(
            "failover",
            "ollama fails → gemini: p50 / bare p50",
            ratio,
            "x",
            f"≤ {FAILOVER_RATIO}x",
            ratio <= FAILOVER_RATIO,
            1.0,
            "bare task router → ollama (500) → gemini",
            {
                "pool_p50_ms": p50(samples["pool"]),
                "bare_p50_ms": p50(samples["bare"]),
                "pool_p99_ms": p99(samples["pool"]),
                "bare_p99_ms": p99(samples["bare"]),
                "n": n,
            },
        )
    )


WAITING_QUEUE = "claude"
_PARKED = "bench:waiting:{}"


def _fill(pool: Pool, key: str, count: int) -> None:
    """Put ``count`` copies of one real ``ai.generate`` message under ``key``.

    One message is published through Celery, then copied in bulk: publishing 100,000 through
    Celery would take a minute and measure the producer.
    """
    pool.app.send_task(
        "ai.generate", kwargs={"request": SIMPLE}, queue=WAITING_QUEUE, routing_key=WAITING_QUEUE
    )
    message = pool.redis.rpop(WAITING_QUEUE)
    have = 0
    while have < count:
        chunk = min(10_000, count - have)
        pool.redis.lpush(key, *([message] * chunk))
        have += chunk


def scale(pool: Pool, report: Report, n: int, sizes: tuple[int, ...]) -> None:
    """Round trips by name while 10, 1,000 and 100,000 requests wait on another queue of the pool
    (Claude's, as when its workers are scaled to zero or down).

    The backlogs are built once, parked under keys of their own, and renamed onto the Claude
    queue in turn (a RENAME is O(1), untimed), so the sizes take turns like every other
    comparison here.
    """
    pool.reset_guards("ollama", "gemini")
    pool.redis.delete(WAITING_QUEUE, *(_PARKED.format(size) for size in sizes))
    results: dict[int, list[float]] = {size: [] for size in sizes}
    try:
        for size in sizes:
            _fill(pool, _PARKED.format(size), size)
        for _ in range(10):
            by_name(pool, SIMPLE)
        for _ in range(n):
            for size in sizes:
                pool.redis.rename(_PARKED.format(size), WAITING_QUEUE)
                results[size].append(timed(lambda: by_name(pool, SIMPLE)))
                pool.redis.rename(WAITING_QUEUE, _PARKED.format(size))
    finally:
        pool.redis.delete(WAITING_QUEUE, *(_PARKED.format(size) for size in sizes))
    base = p50(results[sizes[0]])
    for size in sizes:
        ratio = p50(results[size]) / base
        first = size == sizes[0]
        report.add(
            Figure(
                "scale",
                f"round trip with {size:,} requests waiting (p50)",
                p50(results[size]),
                "ms",
                "" if first else f"≤ {SCALE_RATIO}x the {sizes[0]:,}-waiting p50",
                None if first else ratio <= SCALE_RATIO,
                None if first else base,
                "" if first else f"{sizes[0]:,} waiting",
                {"p99_ms": p99(results[size]), "ratio": ratio, "n": n},
            )
        )
