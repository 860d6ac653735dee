"""One admitted call against the real Redis: its outcome lands even when Redis lost its scripts."""

from __future__ import annotations

import redis

from aipool.breaker import breakers_for
from aipool.contract import Completion
from aipool.guard import SharedGuards
from aipool.quota import quotas_for
from tests.support.guards import real_redis

__all__ = ["real_redis"]


def test_an_outcome_is_recorded_after_redis_lost_its_scripts(real_redis: redis.Redis) -> None:
    # Given a call admitted to gemini (a limited provider)
    guards = SharedGuards(breakers_for(real_redis), quotas_for(real_redis))
    call = guards.admit("gemini", "req-script-flush", 0, 500)
    # When Redis restarts (its scripts are gone) while the call runs, and the call answers
    real_redis.script_flush()
    with call:
        call.answered(
            Completion(text="fine", model="gemini-2.5-flash", input_tokens=20, output_tokens=5)
        )
    # Then the outcome was recorded all the same: the reservation settled to the real tokens
    assert call.recorded is True
    usage = quotas_for(real_redis)["gemini"].usage()
    assert (usage["daily_requests"]["used"], usage["daily_tokens"]["used"]) == (1, 25)
