"""The outbox: a worker's usage records wait for the task's result write, and are never lost."""

from __future__ import annotations

import redis

from aipool.ledger.outbox import Outbox
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import PENDING_KEY, UsageLog


def _record(request_id: str) -> UsageRecord:
    return UsageRecord(request_id, 0, "ollama", "llama3.2:3b", "ok", True, input_tokens=5)


def _pending(client: redis.Redis) -> list[str]:
    return [UsageRecord.from_json(raw).request_id for raw in client.lrange(PENDING_KEY, 0, -1)]


def test_given_no_running_task_when_recorded_then_the_record_is_pushed_at_once(
    ledger_redis: redis.Redis,
) -> None:
    # Given: a producer process (submit() records skipped hops): no task runs here
    outbox = Outbox()
    log = UsageLog(ledger_redis, outbox=outbox)
    # When
    assert log.record(_record("r1"))
    # Then
    assert _pending(ledger_redis) == ["r1"]
    assert outbox.take() == []


def test_given_a_running_task_when_recorded_then_the_record_waits_for_a_write(
    ledger_redis: redis.Redis,
) -> None:
    # Given
    outbox = Outbox()
    log = UsageLog(ledger_redis, outbox=outbox)
    outbox.task_started()
    # When
    assert log.record(_record("r1"))
    assert log.record(_record("r2"))
    # Then: nothing sent yet; the task's end hands back what no write took, in order
    assert _pending(ledger_redis) == []
    left = outbox.task_ended()
    assert [r.request_id for r in left] == ["r1", "r2"]
    assert log.push(left)
    assert sorted(_pending(ledger_redis)) == ["r1", "r2"]


def test_given_a_write_that_failed_when_records_are_given_back_then_they_come_first() -> None:
    # Given
    outbox = Outbox()
    outbox.task_started()
    outbox.hold(_record("r1"))
    taken = outbox.take()
    outbox.hold(_record("r2"))
    # When: the write that took r1 failed
    outbox.give_back(taken)
    # Then
    assert [r.request_id for r in outbox.task_ended()] == ["r1", "r2"]


def test_given_two_tasks_in_threads_when_one_ends_then_the_other_still_holds() -> None:
    # Given
    outbox = Outbox()
    outbox.task_started()
    outbox.task_started()
    # When
    outbox.task_ended()
    # Then
    assert outbox.holding
    assert outbox.hold(_record("r1"))
    outbox.task_ended()
    assert not outbox.holding
    assert not outbox.hold(_record("r2"))


def test_given_redis_refusing_when_pushed_then_each_record_goes_to_the_fallback() -> None:
    # Given: nothing listens on port 1
    stored: list[str] = []
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    log = UsageLog(down, fallback=lambda rec: stored.append(rec.request_id) or True)
    # When
    kept = log.push([_record("r1"), _record("r2")])
    # Then
    assert kept
    assert stored == ["r1", "r2"]
