"""A pool process does not hoard Celery's garbage: memory stays flat over re-dispatched hops.

Every request sent by name is re-dispatched once (router to its provider), and each
``Task.replace`` leaves a reference cycle of about 250 KB that only a full collection frees
(``workers/memory.py``). Without the pool's collections a process grew by tens of megabytes per
few hundred requests until CPython's rare full collection came.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aipool.simulator import Simulator
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.requests import QUESTION
from tests.support.services import RedisServer
from tests.support.sizes import sized

pytestmark = pytest.mark.integration

#: Resident memory a warm pool process may gain over the measured requests.
GROWTH_BOUND_MB = 20
MEASURED_REQUESTS = sized(200, 1000)


def test_a_warm_pool_process_stays_flat_over_hundreds_of_redispatched_requests(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
) -> None:
    # Given a worker with one pool process, warm (its SDK loaded, its first tasks served)
    server = redis_server()
    worker = spawn_worker(server.url, concurrency=1)
    send = producer(server.url)
    send.collect([send.send(QUESTION) for _ in range(40)], timeout=60)
    (child,) = worker.children()
    before = _rss_mb(child)
    # When it serves hundreds of requests, each re-dispatched from router to ollama
    for _ in range(MEASURED_REQUESTS // 20):
        outcomes = send.collect([send.send(QUESTION) for _ in range(20)], timeout=60)
        assert all(o.answered for o in outcomes)
    # Then its memory stayed flat (it used to grow by about 250 KB per request)
    assert worker.children() == [child]
    grown = _rss_mb(child) - before
    print(f"pool process RSS {before:.0f} MiB, +{grown:.1f} MiB after {MEASURED_REQUESTS} requests")
    assert grown < GROWTH_BOUND_MB


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")
