"""Many worker processes share one breaker through the real Redis."""

from __future__ import annotations

import multiprocessing
from typing import Any

import redis

from aipool.breaker import Breaker, BreakerState, BreakerTransition
from aipool.errors import CircuitOpen
from aipool.settings.provider_limits import BreakerSettings

PROCESSES = 8
NOW = 1_764_000_000.0
SETTINGS = BreakerSettings(failure_threshold=5, recovery_timeout=60.0, half_open_max_calls=3)
# fork starts a process in milliseconds; every child opens its own Redis connection.
CTX = multiprocessing.get_context("fork")


def _hammer_failures(url: str, start: Any, out: Any) -> None:
    client = redis.Redis.from_url(url)
    events: list[BreakerTransition] = []
    breaker = Breaker(client, "gemini", SETTINGS, clock=lambda: NOW, listeners=[events.append])
    acquired = counted = late = 0
    start.wait()
    while True:
        try:
            permit = breaker.acquire()
        except CircuitOpen:
            break
        acquired += 1
        if breaker.record_failure(permit):
            counted += 1
        else:
            late += 1
    out.put((acquired, counted, late, [(e.old.value, e.new.value) for e in events]))
    client.close()


def _race_for_trials(url: str, start: Any, out: Any) -> None:
    client = redis.Redis.from_url(url)
    events: list[BreakerTransition] = []
    later = NOW + SETTINGS.recovery_timeout
    breaker = Breaker(client, "gemini", SETTINGS, clock=lambda: later, listeners=[events.append])
    start.wait()
    admitted = refused = 0
    for _ in range(5):
        try:
            breaker.acquire()
            admitted += 1
        except CircuitOpen:
            refused += 1
    out.put((admitted, refused, [(e.old.value, e.new.value) for e in events]))
    client.close()


def _run(target: Any, url: str) -> list[Any]:
    start = CTX.Barrier(PROCESSES)
    out = CTX.Queue()
    procs = [CTX.Process(target=target, args=(url, start, out)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    results = [out.get(timeout=20) for _ in procs]
    for p in procs:
        p.join(timeout=20)
        assert p.exitcode == 0
    out.close()
    out.join_thread()
    return results


def test_concurrent_failures_open_it_after_exactly_the_threshold(guards_redis_url, real_redis):
    # Given a closed breaker and 8 processes calling a failing provider as fast as they can
    # When each acquires and records failures until refused
    results = _run(_hammer_failures, guards_redis_url)
    acquired = sum(r[0] for r in results)
    counted = sum(r[1] for r in results)
    late = sum(r[2] for r in results)
    transitions = [t for r in results for t in r[3]]
    # Then exactly failure_threshold failures counted
    assert counted == SETTINGS.failure_threshold
    # and every other admitted call was one in flight when it opened (at most one per other
    # process), reported after the opening and so not counted
    assert acquired == counted + late
    assert late <= PROCESSES - 1
    # and the opening was announced once in the whole pool
    assert transitions == [("closed", "open")]
    breaker = Breaker(real_redis, "gemini", SETTINGS, clock=lambda: NOW)
    assert breaker.snapshot()["state"] == BreakerState.OPEN.value
    assert breaker.snapshot()["consecutive_failures"] == SETTINGS.failure_threshold


def test_half_open_trial_slots_are_pool_wide(guards_redis_url, real_redis):
    # Given an open breaker whose recovery window has passed
    breaker = Breaker(real_redis, "gemini", SETTINGS, clock=lambda: NOW)
    for _ in range(SETTINGS.failure_threshold):
        breaker.record_failure(breaker.acquire())
    # When 8 processes race for trial slots, 5 tries each
    results = _run(_race_for_trials, guards_redis_url)
    # Then exactly half_open_max_calls calls were admitted in the whole pool
    assert sum(r[0] for r in results) == SETTINGS.half_open_max_calls
    assert sum(r[1] for r in results) == PROCESSES * 5 - SETTINGS.half_open_max_calls
    # and one process, only one, announced the move to half-open
    assert [t for r in results for t in r[2]] == [("open", "half_open")]
