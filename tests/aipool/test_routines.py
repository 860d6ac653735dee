"""Beat's routines decided on Redis's clock (issue #42): a run is skipped only when a later one
already began or it is stale on Redis's clock; a run sent by hand always goes ahead."""

from __future__ import annotations

import redis

from aipool.routines import ROUTINES_KEY, may_run, redis_now, routine_key, stamp

NAME = "aipool.sweep_attempts"


def test_runs_go_ahead_in_the_order_sent_and_an_earlier_one_after_a_later_is_skipped(
    clean_redis: redis.Redis,
) -> None:
    now = redis_now(clean_redis)
    first, later = {"sent": now - 2, "stale_after": 180.0}, {"sent": now - 1, "stale_after": 180.0}
    assert may_run(clean_redis, NAME, first) == (True, "run")
    assert may_run(clean_redis, NAME, later) == (True, "run")
    # A copy of the first (a redelivery, a second worker) arrives after the later one began
    assert may_run(clean_redis, NAME, first) == (False, "superseded")
    assert may_run(clean_redis, NAME, later) == (False, "superseded")


def test_a_run_older_than_its_bound_on_redis_clock_is_skipped_and_the_next_tick_runs(
    clean_redis: redis.Redis,
) -> None:
    now = redis_now(clean_redis)
    assert may_run(clean_redis, NAME, {"sent": now - 200, "stale_after": 180.0}) == (
        False,
        "stale",
    )
    assert may_run(clean_redis, NAME, stamp(clean_redis, 180.0)) == (True, "run")
    # No bound: a late daily report still runs
    assert may_run(clean_redis, "aipool.daily_budget_report", {"sent": now - 3600}) == (True, "run")


def test_a_run_sent_by_hand_always_goes_ahead_and_every_run_is_recorded(
    clean_redis: redis.Redis,
) -> None:
    may_run(clean_redis, NAME, stamp(clean_redis, 180.0))
    assert may_run(clean_redis, NAME, None) == (True, "run")
    assert may_run(clean_redis, NAME, None) == (True, "run")
    ran = float(clean_redis.hget(routine_key(NAME), "ran") or 0)
    assert abs(ran - redis_now(clean_redis)) < 5
    assert clean_redis.smembers(ROUTINES_KEY) == {NAME.encode()}
