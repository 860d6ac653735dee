"""Many worker processes share one quota through the real Redis."""

from __future__ import annotations

import contextlib
import multiprocessing
import random
from typing import Any
from zoneinfo import ZoneInfo

import redis

from aipool.errors import QuotaExceeded
from aipool.quota import Quota
from aipool.settings.provider_limits import QuotaLimits

PROCESSES = 8
TAIPEI = ZoneInfo("Asia/Taipei")
BASE = 1_795_000_000.0  # 2026-11-18 late morning, Taipei: far from any day or month boundary
# fork starts a process in milliseconds; every child opens its own Redis connection.
CTX = multiprocessing.get_context("fork")


def _run(target: Any, url: str, *extra: Any) -> list[Any]:
    start = CTX.Barrier(PROCESSES)
    out = CTX.Queue()
    procs = [
        CTX.Process(target=target, args=(url, start, out, seed, *extra))
        for seed in range(PROCESSES)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=20) for _ in procs]
    for p in procs:
        p.join(timeout=20)
        assert p.exitcode == 0
    out.close()
    out.join_thread()
    return results


RPM_LIMITS = QuotaLimits(rpm=10)


def _hammer_rpm(url: str, start: Any, out: Any, seed: int, ticks: Any) -> None:
    # One virtual clock for the whole pool: each attempt moves it 0.6 s, so 480 attempts span
    # almost five minutes of quota time in well under a second of real time.
    client = redis.Redis.from_url(url)
    now = [BASE]
    quota = Quota(client, "gemini", RPM_LIMITS, clock=lambda: now[0], tz=TAIPEI)
    reserved: list[float] = []
    start.wait()
    for i in range(60):
        with ticks.get_lock():
            ticks.value += 1
            now[0] = BASE + ticks.value * 0.6
        with contextlib.suppress(QuotaExceeded):
            reserved.append(quota.reserve(f"p{seed}-{i}", 0, 1).at)
    out.put(reserved)
    client.close()


def test_no_sixty_second_window_holds_more_than_rpm(guards_redis_url, real_redis):
    # Given an rpm of 10 and 8 processes trying 60 calls each over ~5 minutes of quota time
    ticks = CTX.Value("i", 0)
    # When they all reserve as fast as they can
    stamps = sorted(at for r in _run(_hammer_rpm, guards_redis_url, ticks) for at in r)
    # Then no 60-second window [t, t + 60) holds more than 10 reservations
    busiest = max(sum(1 for s in stamps if t <= s < t + 60) for t in stamps)
    assert busiest <= (RPM_LIMITS.rpm or 0)
    # and the window is not starved either: about 10 per minute got through
    span_minutes = (stamps[-1] - stamps[0]) / 60
    assert len(stamps) >= (RPM_LIMITS.rpm or 0) * span_minutes * 0.8


TOKEN_LIMITS = QuotaLimits(daily_tokens=10_000)


def _hammer_tokens(url: str, start: Any, out: Any, seed: int) -> None:
    client = redis.Redis.from_url(url)
    quota = Quota(client, "claude", TOKEN_LIMITS, clock=lambda: BASE, tz=TAIPEI)
    rng = random.Random(seed)
    charged = refused = max_reservation = 0
    start.wait()
    for i in range(80):
        tokens = rng.randint(1, 400)
        try:
            res = quota.reserve(f"p{seed}-{i}", 0, tokens)
        except QuotaExceeded:
            refused += 1
            continue
        max_reservation = max(max_reservation, tokens)
        if rng.random() < 0.1:
            quota.release(res)  # the call failed at the provider: tokens come back
        else:
            actual = rng.randint(tokens // 2, tokens)
            quota.settle(res, actual)
            charged += actual
    out.put((charged, refused, max_reservation))
    client.close()


def test_concurrent_reservations_never_overspend_the_daily_tokens(guards_redis_url, real_redis):
    # Given a daily budget of 10,000 tokens and 8 processes asking 80 times for 1-400 tokens each
    # When they reserve, then settle at the real usage (or release on failure), concurrently
    results = _run(_hammer_tokens, guards_redis_url)
    # Then the budget ran out (some were refused) but was never overspent
    quota = Quota(real_redis, "claude", TOKEN_LIMITS, clock=lambda: BASE, tz=TAIPEI)
    used = quota.usage()["daily_tokens"]["used"]
    assert sum(r[1] for r in results) > 0
    assert used <= (TOKEN_LIMITS.daily_tokens or 0) + max(r[2] for r in results)
    assert used <= (TOKEN_LIMITS.daily_tokens or 0)  # settles here never exceed the estimate
    # and the counter is exactly what the processes charged: nothing lost, nothing twice
    assert used == sum(r[0] for r in results)
