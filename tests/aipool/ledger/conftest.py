"""Fixtures of the ledger tests: a real PostgreSQL scratch database and Redis database 12."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine

from aipool.ledger.testing import empty_ledger, ledger_engine

REDIS_TEST_URL = "redis://127.0.0.1:6379/12"


@pytest.fixture(scope="session")
def _session_engine() -> Iterator[Engine]:
    engine = ledger_engine("aipool_test_ledger")
    yield engine
    engine.dispose()


@pytest.fixture
def engine(_session_engine: Engine) -> Engine:
    """The ledger database, empty at the start of each test."""
    empty_ledger(_session_engine)
    return _session_engine


@pytest.fixture
def ledger_redis() -> Iterator[redis.Redis]:
    """Redis database 12, flushed before and after each test (never any other database)."""
    client = redis.Redis.from_url(REDIS_TEST_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
