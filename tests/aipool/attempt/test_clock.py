"""The pool's clock as one process estimates it, and the ETAs written on it (issue #42): a
message to be taken later names its instant on Redis's clock, whatever its sender's host says."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import fakeredis
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from aipool.attempt.clock import RedisClock, due_in


def _redis_now(client: Any) -> float:
    seconds, micros = client.time()
    return float(seconds) + float(micros) / 1e6


@pytest.mark.parametrize("skew_s", [60.0, -60.0])
def test_a_sender_off_redis_writes_the_eta_its_delay_after_redis_now(skew_s: float) -> None:
    # Given a process whose host clock is a minute off Redis's, never told Redis's time yet
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    clock = RedisClock(lambda: time.time() + skew_s)
    # When it writes the ETA of a message to be taken 5 s from now
    eta = due_in(5.0, clock, client)
    # Then the ETA is 5 s after Redis's now, not after its host's
    assert eta.tzinfo is not None
    assert eta.timestamp() - _redis_now(client) == pytest.approx(5.0, abs=0.5)


def test_a_sender_that_cannot_ask_redis_writes_the_eta_on_its_host_clock() -> None:
    # Given a process never told Redis's time and a Redis that does not answer
    class Down:
        def time(self) -> Any:
            raise RedisConnectionError("down")

    clock = RedisClock(lambda: 1_000.0)
    # When it writes an ETA 5 s ahead
    eta = due_in(5.0, clock, Down())
    # Then it is its host's clock plus the delay (what Celery's countdown would have written)
    assert eta == datetime.fromtimestamp(1_005.0, tz=UTC)


@pytest.mark.parametrize(("skew_s", "shown_s"), [(60.0, 1_065.0), (-60.0, 945.0)])
def test_an_instant_on_the_pools_clock_is_read_on_this_hosts(skew_s: float, shown_s: float) -> None:
    # Given a host a minute off, told that Redis's time is 1000 s
    clock = RedisClock(lambda: 1_000.0 + skew_s)
    clock.told(1_000.0)
    # When the pool's instant 1005 s is read on this host
    shown = clock.on_host(datetime.fromtimestamp(1_005.0, tz=UTC))
    # Then this host's clock shows that moment a minute later (ahead) or earlier (behind):
    # 5 s from its own now either way
    assert shown.timestamp() == pytest.approx(shown_s)
    assert shown.timestamp() - (1_000.0 + skew_s) == pytest.approx(5.0)
