"""The dispatch-time peek carries the hop's held ledger records in its own round trip."""

from __future__ import annotations

import redis

from aipool.breaker import breakers_for
from aipool.guard import SharedGuards
from aipool.ledger.outbox import Outbox
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import UsageLog
from aipool.quota import quotas_for
from tests.support.guards import real_redis

__all__ = ["real_redis"]

SPOOL = "aipool:test:guard:spool"


def _skip(request_id: str) -> UsageRecord:
    return UsageRecord(request_id, 0, "ollama", "llama3.2:3b", "circuit_open", False)


def test_given_a_held_skip_record_when_the_next_provider_is_peeked_then_it_rides_along(
    real_redis: redis.Redis,
) -> None:
    # Given: a task running, its skipped hop's record held
    outbox = Outbox()
    log = UsageLog(real_redis, key=SPOOL, outbox=outbox)
    guards = SharedGuards(breakers_for(real_redis), quotas_for(real_redis), passengers=log)
    outbox.task_started()
    log.record(_skip("r1"))
    # When
    refusal = guards.blocked("gemini", 100)
    # Then: the peek answered as always, and the record is in the spool, not held any more
    assert refusal is None
    assert [UsageRecord.from_json(x).request_id for x in real_redis.lrange(SPOOL, 0, -1)] == ["r1"]
    assert outbox.task_ended() == []


def test_given_redis_unreachable_when_peeked_then_the_held_records_stay_held() -> None:
    # Given: nothing listens on port 1
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    outbox = Outbox()
    log = UsageLog(down, key=SPOOL, outbox=outbox)
    guards = SharedGuards(breakers_for(down), quotas_for(down), passengers=log)
    outbox.task_started()
    log.record(_skip("r1"))
    # When
    refusal = guards.blocked("gemini", 100)
    # Then: the hop is skipped as unguardable, and the record waits for the task's end
    assert refusal is not None and refusal.code == "guard_unavailable"
    assert [r.request_id for r in outbox.task_ended()] == ["r1"]
