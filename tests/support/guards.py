"""Fixtures for breaker and quota tests: the same behaviour over fakeredis and the real Redis."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import fakeredis
import pytest
import redis

from tests.support.shared_servers import redis_db

#: Database 11 belongs to the breaker and quota tests; only it is ever flushed.
GUARDS_REDIS_URL = os.environ.get("AIPOOL_GUARDS_TEST_REDIS_URL", redis_db(11))


class Clock:
    """A clock the test moves by hand, so no test sleeps through a recovery window."""

    def __init__(self, now: float = 1_764_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture()
def real_redis() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(GUARDS_REDIS_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture(params=["fakeredis", "real-redis"])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fakeredis":
        fake = fakeredis.FakeRedis(server=fakeredis.FakeServer())
        yield fake
        fake.close()
    else:
        yield request.getfixturevalue("real_redis")


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture()
def guards_redis_url(real_redis: redis.Redis) -> str:
    """The real Redis database for tests that start other processes (flushed around the test)."""
    return GUARDS_REDIS_URL
