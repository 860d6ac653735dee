"""A producer waiting for its answer while Redis is away for longer than a blip.

The producer sends through the pool's app (``workers.app``, as ``tasks.client`` does), whose
result backend is the pool's (``workers/result_backend.py``). A producer that imports nothing of
the pool has Celery's own, and its limits.

A worker keeps trying to store an answer until its hard time limit (120 s; 41 tries of up to 6 s
each would take longer: ``aipool.redis.results.outage_window_s``); a producer waiting in ``get``
waits as long, then reads it, instead of giving up after 5 s with
"Retry limit exceeded ... must be restarted" (the result backend's 5 s write policy, which Celery's
result consumer also reconnected with). A wait never outlasts the caller's own timeout, and an
outage longer than the window ends in a clear error after which the answer can still be read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from celery.exceptions import TimeoutError as CeleryTimeout

from aipool.redis.results import ResultStoreLost
from aipool.simulator import Simulator
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.requests import CRITICAL
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

WORKER_ENV = {
    "AIPOOL_CLAUDE_RPM": "unlimited",
    "AIPOOL_TIMEOUT_CLAUDE": "20",
    "AIPOOL_VISIBILITY_TIMEOUT": "90",
    "AIPOOL_TASK_TIME_LIMIT": "60",
    "AIPOOL_TASK_SOFT_TIME_LIMIT": "50",
}
#: The call in flight ends while Redis is down, so its answer waits on the worker's retries.
SLOW_MS = 3000
#: Longer than the 5 s the producer used to wait, well within the workers' 120 s.
DOWN_S = 9.0


def test_a_producer_waiting_across_a_redis_outage_of_9_s_gets_the_answer(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
) -> None:
    # Given a request in a slow Claude call, its producer waiting in get
    server = redis_server()
    spawn_worker(server.url, concurrency=1, **WORKER_ENV)
    send = producer(server.url, pools_backend=True)
    providers.set_fault("claude", "slow", ms=SLOW_MS)
    calls = providers.calls("claude")
    held = send.send(CRITICAL)
    eventually(lambda: providers.calls("claude") > calls, 30, "the call in flight")
    with ThreadPoolExecutor(1) as waiter:
        waiting = waiter.submit(send.collect, [held], timeout=DOWN_S + 20)
        time.sleep(0.5)  # (in its drain loop, subscribed: the stored result was read)
        # When Redis is killed and back 9 s later, the call ending meanwhile
        started = time.monotonic()
        try:
            server.restart(down_for=DOWN_S)
        finally:
            providers.heal("claude")
        [outcome] = waiting.result()
    # Then the producer gets the contract answer once Redis is back, not an error 5 s in
    assert outcome.status == "ok", repr(outcome.error)
    assert outcome.at - started >= DOWN_S
    # And it sends and receives again on the same app
    assert send.collect([send.send(CRITICAL)], timeout=20)[0].status == "ok"


def test_a_wait_ends_at_its_timeout_and_a_longer_outage_in_a_clear_error_then_reads_the_answer(
    redis_server: Callable[..., RedisServer],
    producer: Callable[[str], Producer],
) -> None:
    # Given a producer waiting for a result (no worker: the test writes it) on a Redis that dies
    server = redis_server()
    send = producer(server.url, pools_backend=True)
    waiting = send.send_task("ai.ping", queue="nobody")
    server.crash()
    try:
        # When it waits 3 s while Redis is down
        began = time.monotonic()
        with pytest.raises(CeleryTimeout):
            waiting.get(timeout=3)
        # Then the wait ends at its own timeout, not at the end of the outage window
        assert time.monotonic() - began < 5
        # And with a window of 3 s (a worker's hard limit, which ends its tries to store an
        # answer), a wait without timeout ends in a clear error
        send.app.conf.task_time_limit = 3
        began = time.monotonic()
        with pytest.raises(ResultStoreLost, match="unreachable for more than 3 s"):
            waiting.get(timeout=30)
        assert time.monotonic() - began < 8
    finally:
        server.start()
    # And once Redis is back, the same result gets the answer stored while it waits
    with Producer(server.url) as worker_side:
        answer = threading.Timer(
            1.0, worker_side.app.backend.store_result, (waiting.id, "pong", "SUCCESS")
        )
        answer.start()
        try:
            assert waiting.get(timeout=10) == "pong"
        finally:
            answer.join()
