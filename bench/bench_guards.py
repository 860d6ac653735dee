"""How much the shared breaker and quota add to each model call, against a real Redis.

Run: ``.venv/bin/python bench/bench_guards.py`` (``REDIS_URL`` or redis://127.0.0.1:6379/14;
``BENCH_ROUNDS`` rounds per figure). Prints p50/p99 in microseconds for one PING round trip (the
floor every Redis-backed guard pays), then for each guard step, all measured in the same run.
Uses its own provider names and deletes only their keys.
"""

from __future__ import annotations

import os
import statistics
import time
import uuid
from collections.abc import Callable

import redis

from aipool.breaker import Breaker
from aipool.quota import Quota
from aipool.settings.provider_limits import BreakerSettings, QuotaLimits

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3000"))
WARMUP = 200
LIMITED = "bench-limited"
UNLIMITED = "bench-unlimited"
# Limits high enough that nothing is refused: the benchmark measures the check, not a refusal.
ROOMY = QuotaLimits(
    rpm=10_000_000, daily_requests=10**9, daily_tokens=10**12, monthly_tokens=10**13
)
SETTINGS = BreakerSettings(failure_threshold=5, recovery_timeout=60.0, half_open_max_calls=3)


def measure(step: Callable[[], object], rounds: int = ROUNDS) -> tuple[float, float]:
    """p50 and p99 of ``step`` in microseconds, over ``rounds`` after a warm-up."""
    for _ in range(min(WARMUP, rounds)):
        step()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        step()
        samples.append((time.perf_counter_ns() - start) / 1000)
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return statistics.median(samples), cuts[98]


def main() -> None:
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14")
    client = redis.Redis.from_url(url)
    run = uuid.uuid4().hex[:8]
    counter = iter(range(10**9))

    breaker = Breaker(client, LIMITED, SETTINGS)
    quota = Quota(client, LIMITED, ROOMY)
    free_breaker = Breaker(client, UNLIMITED, SETTINGS)
    free_quota = Quota(client, UNLIMITED, QuotaLimits())

    def breaker_step() -> None:
        breaker.record_success(breaker.acquire())

    def quota_step() -> None:
        res = quota.reserve(f"{run}-q{next(counter)}", 0, 500)
        quota.settle(res, 420)

    def guard_step() -> None:
        permit = breaker.acquire()
        res = quota.reserve(f"{run}-g{next(counter)}", 0, 500)
        quota.settle(res, 420)
        breaker.record_success(permit)

    def unlimited_step() -> None:
        permit = free_breaker.acquire()
        res = free_quota.reserve(f"{run}-u{next(counter)}", 0, 500)
        free_quota.settle(res, 420)
        free_breaker.record_success(permit)

    figures: list[tuple[str, Callable[[], object]]] = [
        ("redis PING round trip", client.ping),
        ("breaker acquire + record_success", breaker_step),
        ("quota reserve + settle (limited)", quota_step),
        ("whole guard, limited provider", guard_step),
        ("whole guard, unlimited provider", unlimited_step),
        (
            "unlimited quota reserve + settle",
            lambda: free_quota.settle(free_quota.reserve("x", 0, 1), 1),
        ),
    ]
    try:
        print(f"{url}  rounds={ROUNDS}")
        print(f"{'step':<36} {'p50 µs':>9} {'p99 µs':>9}")
        for name, step in figures:
            p50, p99 = measure(step)
            print(f"{name:<36} {p50:>9.1f} {p99:>9.1f}")
    finally:
        for provider in (LIMITED, UNLIMITED):
            for pattern in (f"aipool:breaker:{provider}:*", f"aipool:quota:{provider}:*"):
                keys = list(client.scan_iter(match=pattern, count=1000))
                for start in range(0, len(keys), 500):
                    client.delete(*keys[start : start + 500])
        client.close()


if __name__ == "__main__":
    main()
