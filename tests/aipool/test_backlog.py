"""The backlog of each lane on a real Redis (the script uses Lua's cjson): its length, the age of its
oldest message on Redis's clock, and when the pool first saw each message waiting."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import redis

from aipool.backlog import STAMPS_AFTER_EMPTY_S, first_seen, sight, stamps_key
from tests.support.private_pool import private_url


def _envelope(task_id: str) -> str:
    # What kombu pushes onto a Redis list for a Celery task message.
    return json.dumps({"body": "W10=", "headers": {"id": task_id, "task": "ai.generate"}})


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
    first = sight(client, ["router", "router.urgent"])
    assert first["router"].length == 2 and first["router"].oldest_age_s < 0.5
    assert first["router.urgent"].length == 0 and first["router.urgent"].oldest_age_s == 0
    # When a second passes and a third message arrives
    time.sleep(1.1)
    client.lpush("router", _envelope("c"))
    later = sight(client, ["router"])
    # Then the oldest has waited since it was first seen, on Redis's clock
    assert later["router"].length == 3
    assert 1.0 <= later["router"].oldest_age_s < 3
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
