"""The backlog of each lane on a real Redis (the script uses Lua's cjson): its length, the age of its
oldest message on Redis's clock, and when the pool first saw each message waiting."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import redis
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from aipool import backlog
from aipool.backlog import STAMPS_AFTER_EMPTY_S, first_seen, sight, stamps_key
from tests.support.private_pool import private_url


def _envelope(task_id: str) -> str:
    # What kombu pushes onto a Redis list for a Celery task message.
    return json.dumps({"body": "W10=", "headers": {"id": task_id, "task": "ai.generate"}})


def _redis_now(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return seconds + micros / 1e6


@pytest.fixture()
def client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(private_url(14))
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


def test_a_lane_reports_its_length_and_how_long_its_oldest_message_waited(
    client: redis.Redis,
) -> None:
    # Given two messages waiting in the router's lane (kombu pushes on the left)
    client.lpush("router", _envelope("a"), _envelope("b"))
    before = _redis_now(client)
    first = sight(client, ["router", "router.urgent"])
    assert first["router"].length == 2
    assert 0 <= first["router"].oldest_age_s <= _redis_now(client) - before
    assert first["router.urgent"].length == 0 and first["router.urgent"].oldest_age_s == 0
    # When a second passes and a third message arrives
    time.sleep(1.1)
    client.lpush("router", _envelope("c"))
    later = sight(client, ["router"])
    # Then the oldest has waited since it was first seen, on Redis's clock
    assert later["router"].length == 3
    assert 1.0 <= later["router"].oldest_age_s <= _redis_now(client) - before
    seen_a, seen_c = first_seen(client, "router", "a"), first_seen(client, "router", "c")
    assert seen_a is not None and seen_c is not None and seen_c - seen_a >= 1.0
    assert first_seen(client, "router", "never-sent") is None


def test_a_popped_message_keeps_its_stamp_for_the_worker_that_took_it(
    client: redis.Redis,
) -> None:
    # Given a request stamped while it waited in the router's lane
    client.lpush("router", _envelope("r"))
    sight(client, ["router"])
    stamped = first_seen(client, "router", "r")
    assert stamped is not None
    # When a worker pops it and, before that worker reads its stamp, another sights the empty lane
    client.rpop("router")
    sight(client, ["router"])
    # Then the worker still finds when the pool first saw it (its deadline counts the wait)
    assert first_seen(client, "router", "r") == stamped


def test_an_emptied_lane_keeps_its_stamps_for_a_grace_and_unreadable_messages_are_passed_over(
    client: redis.Redis,
) -> None:
    # Given a lane holding a message and one that is not a kombu envelope
    client.lpush("ollama.urgent", _envelope("x"), "not json")
    assert sight(client, ["ollama.urgent"])["ollama.urgent"].length == 2
    assert first_seen(client, "ollama.urgent", "x") is not None
    assert client.ttl(stamps_key("ollama.urgent")) > STAMPS_AFTER_EMPTY_S
    # When the lane empties and is sighted
    client.delete("ollama.urgent")
    sight(client, ["ollama.urgent"])
    # Then its stamps are kept only for the grace, and a second sighting does not extend it
    assert 0 < client.ttl(stamps_key("ollama.urgent")) <= STAMPS_AFTER_EMPTY_S
    client.expire(stamps_key("ollama.urgent"), 5)
    sight(client, ["ollama.urgent"])
    assert client.ttl(stamps_key("ollama.urgent")) <= 5


# -- the stamps as a state machine -------------------------------------------------------------
#
# | event                         | the lane's stamps afterwards                                  |
# |-------------------------------|---------------------------------------------------------------|
# | a message is pushed or popped | unchanged (only a sighting writes)                            |
# | sighting, lane empty          | kept; they expire STAMPS_AFTER_EMPTY_S later at the latest    |
# | sighting, lane not empty      | over MAX_STAMPS: all forgotten first; then every message in   |
# |                               | the ENDS newest and ENDS oldest gets one if it has none       |
# | a stamp is read               | unchanged: the same time on every read, popped messages too   |
#
# The model keeps which task ids have a stamp and the time each was first read; ENDS and
# MAX_STAMPS are made small so that the middle of a list and the cap are reached.

SMALL_ENDS = 2
SMALL_CAP = 6


class LaneStamps(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.limits = (backlog.ENDS, backlog.MAX_STAMPS)
        backlog.ENDS, backlog.MAX_STAMPS = SMALL_ENDS, SMALL_CAP
        self.client = redis.Redis.from_url(private_url(14))
        self.client.flushdb()
        self.waiting: list[str] = []  # newest first, as kombu's list holds them
        self.stamped: set[str] = set()
        self.read: dict[str, float] = {}  # the stamp first read of each id
        self.next_id = 0

    def teardown(self) -> None:
        backlog.ENDS, backlog.MAX_STAMPS = self.limits
        self.client.flushdb()
        self.client.close()

    @rule(garbage=st.booleans())
    def push(self, garbage: bool) -> None:
        if garbage:
            self.client.lpush("router", "not json")
            self.waiting.insert(0, "")
            return
        task_id = f"t{self.next_id}"
        self.next_id += 1
        self.client.lpush("router", _envelope(task_id))
        self.waiting.insert(0, task_id)

    @precondition(lambda self: self.waiting)
    @rule()
    def pop(self) -> None:
        self.client.rpop("router")
        self.waiting.pop()

    @rule()
    def sight(self) -> None:
        backlog = sight(self.client, ["router"])["router"]
        assert backlog.length == len(self.waiting)
        if self.waiting:
            if len(self.stamped) > SMALL_CAP:
                self.stamped.clear()
                self.read.clear()
            ends = self.waiting[:SMALL_ENDS] + self.waiting[-SMALL_ENDS:]
            self.stamped.update(task_id for task_id in ends if task_id)
        else:
            ttl = self.client.ttl(stamps_key("router"))
            assert ttl == -2 or 0 < ttl <= STAMPS_AFTER_EMPTY_S
        oldest = self.waiting[-1] if self.waiting else ""
        if oldest in self.read:
            now_s, now_us = self.client.time()
            assert 0 <= backlog.oldest_age_s <= now_s + now_us / 1e6 - self.read[oldest] + 0.01
        elif not oldest:
            assert backlog.oldest_age_s == 0

    @rule(data=st.data())
    def read_a_stamp(self, data: st.DataObject) -> None:
        if self.next_id == 0:
            return
        task_id = f"t{data.draw(st.integers(0, self.next_id - 1))}"
        seen = first_seen(self.client, "router", task_id)
        if task_id not in self.stamped:
            assert seen is None
            return
        assert seen is not None
        # A popped message's stamp is the one it had while waiting, whatever was sighted since.
        assert self.read.setdefault(task_id, seen) == seen


LaneStamps.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestLaneStamps = LaneStamps.TestCase
