"""Priorities and autoscaling agree: one list per queue, whatever priority a producer gives.

kombu's Redis transport would keep each priority of a queue in a list of its own
(``claude\\x06\\x163``), which KEDA's Redis list scaler (one ``listName`` per queue) never counts,
and would serve priority 0 first, the reverse of AMQP. The pool turns priorities off on the Redis
broker, so a queue's backlog is the length of the list named like it; RabbitMQ's quorum queues
keep one FIFO per queue too. A producer's ``priority`` is still carried on every hop; urgency is
the request's own ``priority`` field (``critical`` starts at Claude).
"""

from __future__ import annotations

import uuid

import pytest

from tasks.client import submit

pytestmark = pytest.mark.integration

#: kombu's separator between a queue's name and its priority in a Redis list name.
PRIORITY_SEPARATOR = "\x06\x16"


def test_given_messages_of_every_priority_when_queued_on_redis_then_they_wait_in_one_list(
    celery_app, redis_client
) -> None:  # type: ignore[no-untyped-def]
    # Given a queue no worker consumes
    queue = f"priorities-{uuid.uuid4().hex[:12]}"
    try:
        # When a producer with the pool's settings sends a message at each priority 0-9
        for priority in range(10):
            celery_app.send_task("ai.ping", queue=queue, priority=priority)
        # Then all ten wait in the list named like the queue, the one KEDA's scaler counts
        assert redis_client.llen(queue) == 10
        assert not list(redis_client.scan_iter(match=f"{queue}{PRIORITY_SEPARATOR}*"))
    finally:
        redis_client.delete(queue, f"_kombu.binding.{queue}")


def test_given_a_producer_priority_when_a_request_falls_back_then_it_is_answered(
    healthy, clean_redis, broker
) -> None:  # type: ignore[no-untyped-def]
    # Given Ollama down, so the request takes a second hop that carries the producer's priority
    healthy.set_fault("ollama", "down")
    # When a producer sends it with the highest Celery priority
    answer = submit({"prompt": "What is a pod?"}, app=broker.app, priority=9).get(timeout=30)
    # Then it is answered by the next provider
    assert answer["status"] == "ok"
    assert [(a["provider"], a["outcome"]) for a in answer["attempts"]] == [
        ("ollama", "error"),
        ("gemini", "ok"),
    ]
    # and on Redis no priority list of the pool's queues was ever made
    if broker.name == "redis":
        assert not [key for key in clean_redis.scan_iter(match="*" + PRIORITY_SEPARATOR + "*")]
