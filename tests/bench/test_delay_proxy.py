"""The delay proxy puts Redis a network away: every request waits, answers come back in order."""

from __future__ import annotations

import statistics
import time
from urllib.parse import urlsplit

import redis

from bench.delay_proxy import started
from tests.conftest import TEST_REDIS_URL


def test_every_request_through_the_proxy_waits_its_delay_and_is_answered_in_order() -> None:
    # Given a proxy to the test Redis that holds every request 5 ms
    direct = urlsplit(TEST_REDIS_URL)
    with started(f"{direct.hostname}:{direct.port}", 5.0) as port:
        client = redis.Redis(host=direct.hostname, port=port, db=int(direct.path.strip("/") or 0))
        try:
            # When commands are sent one at a time
            took = []
            for i in range(10):
                began = time.perf_counter()
                assert client.echo(f"m{i}") == f"m{i}".encode()
                took.append((time.perf_counter() - began) * 1000)
            # Then each waited at least the delay
            assert min(took) >= 5.0, took
            # And a pipeline written at once waits the delay once, its answers in order
            pipe = client.pipeline(transaction=False)
            for i in range(50):
                pipe.echo(f"p{i}")
            began = time.perf_counter()
            answers = pipe.execute()
            assert answers == [f"p{i}".encode() for i in range(50)]
            assert (time.perf_counter() - began) * 1000 < 5.0 * 10 + statistics.median(took)
        finally:
            client.close()
