"""Issue #29: a request sent by name counts its deadline from when the pool first saw it waiting.

A router whose one process is busy for 4 s holds a request with ``deadline_s: 2`` in its queue.
The worker stamps the waiting message on Redis's clock (:mod:`aipool.backlog`); when the router
gets to it, its deadline has passed: no provider is called, and it gets the chain's end (the
static answer) with ``deadline`` in its attempts (issue #42: never a bare error). On main the deadline started when the router ran it, so it was answered "ok" 4 s late.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from aipool.simulator import Simulator
from tests.support.private_pool import PrivatePool, private_pool, send

TIMEOUT = 30


@pytest.fixture(scope="module")
def busy_router(simulator: Simulator, ledger_url: str) -> Iterator[PrivatePool]:
    """One process on every lane, so one busy task holds the router queue."""
    with private_pool(12, concurrency=1, DATABASE_URL=ledger_url) as pool:
        yield pool


def test_time_waiting_in_the_router_queue_counts_against_the_deadline(
    busy_router: PrivatePool, healthy: Simulator
) -> None:
    # Given a router busy for 4 s
    busy_router.app.send_task("tests.busy", args=[4.0], queue="router")
    time.sleep(0.3)
    calls_before = healthy.calls("ollama")
    # When a request asking for an answer within 2 s is sent by name behind it
    sent = time.monotonic()
    answer = send(busy_router, {"prompt": "什麼是 Kubernetes 的 pod？", "deadline_s": 2}).get(
        timeout=TIMEOUT
    )
    waited = time.monotonic() - sent
    # Then every provider is passed over with `deadline` (its 4 s in the queue counted), none is
    # called, and the static answer ends the chain
    assert waited >= 3.5
    assert answer["status"] == "fallback", answer
    assert {a["outcome"] for a in answer["attempts"]} == {"deadline", "fallback"}
    assert healthy.calls("ollama") == calls_before
    # and its latency counts the queue wait: more than the whole deadline, though the router gave
    # it no time at all (the stamp that starts the clock is taken within about a second of the
    # message's arrival, later on a loaded machine, so the bound is the deadline, not the wait)
    assert answer["latency_ms"] > 2000


def test_a_request_with_time_left_after_the_queue_is_answered(
    busy_router: PrivatePool, healthy: Simulator
) -> None:
    # Given a router busy for 2.5 s
    busy_router.app.send_task("tests.busy", args=[2.5], queue="router")
    time.sleep(0.3)
    # When a request asking for an answer within 10 s is sent by name behind it
    answer = send(busy_router, {"prompt": "什麼是 Kubernetes 的 pod？", "deadline_s": 10}).get(
        timeout=TIMEOUT
    )
    # Then it is answered, and its latency counts the wait in the queue (the worker stamps what
    # waits once a second, so at least the last second of its 2.2 s wait)
    assert answer["status"] == "ok", answer
    assert answer["latency_ms"] >= 1000
