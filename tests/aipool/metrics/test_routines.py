"""The routines' gauges: how long the oldest unswept call has waited, and each routine's last run,
both on Redis's clock."""

from __future__ import annotations

import redis

from aipool.attempt.layout import LEASES_KEY
from aipool.metrics.routines import RoutineState
from aipool.routines import may_run, redis_now


def _samples(collector: RoutineState) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (s.name, tuple(s.labels.values())): s.value
        for family in collector.collect()
        for s in family.samples
    }


def test_the_oldest_call_past_its_lease_and_each_routines_last_run_are_measured(
    clean_redis: redis.Redis,
) -> None:
    now = redis_now(clean_redis)
    clean_redis.zadd(LEASES_KEY, {"gone": now - 100, "live": now + 30})
    may_run(clean_redis, "aipool.sweep_attempts", None)
    samples = _samples(RoutineState(lambda: clean_redis))
    assert 99 <= samples[("aipool_attempt_lease_overdue_seconds", ())] < 110
    assert samples[("aipool_routine_last_run_age_seconds", ("aipool.sweep_attempts",))] < 5


def test_no_call_past_its_lease_reads_zero(clean_redis: redis.Redis) -> None:
    clean_redis.zadd(LEASES_KEY, {"live": redis_now(clean_redis) + 30})
    assert (
        _samples(RoutineState(lambda: clean_redis))[("aipool_attempt_lease_overdue_seconds", ())]
        == 0
    )


def test_a_redis_that_cannot_be_read_leaves_the_gauges_out() -> None:
    def unreachable() -> redis.Redis:
        raise redis.ConnectionError("down")

    assert _samples(RoutineState(unreachable)) == {}
