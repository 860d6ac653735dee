"""Fixtures of the ledger tests: a real PostgreSQL scratch database and the session's Redis."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from aipool.ledger.db import make_engine, migrate
from aipool.ledger.testing import empty_ledger, ledger_engine

# The session's own Redis database: only the ledger's keys are cleared, never the whole database,
# which also holds the broker's queues and bindings of the session's workers.
REDIS_TEST_URL = os.environ.get("AIPOOL_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
LEDGER_KEYS = "aipool:ledger:*"
# Beside the session's test database ("<name>_ledger"), so runs given different test databases
# never empty each other's ledger tables.
LEDGER_DATABASE = "{}_ledger".format(
    make_url(
        os.environ.get(
            "AIPOOL_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/aipool_test"
        )
    ).database
)


@pytest.fixture(scope="session")
def _session_engine() -> Iterator[Engine]:
    engine = ledger_engine(LEDGER_DATABASE)
    yield engine
    engine.dispose()


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """The embedded default: a migrated SQLite ledger file of this test's own."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    migrate(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()


@pytest.fixture(params=["postgresql", "sqlite"])
def any_engine(request: pytest.FixtureRequest) -> Engine:
    """Each ledger backend in turn, empty."""
    fixture = "engine" if request.param == "postgresql" else "sqlite_engine"
    return request.getfixturevalue(fixture)  # type: ignore[no-any-return]


@pytest.fixture
def engine(_session_engine: Engine) -> Engine:
    """The ledger database, empty at the start of each test."""
    empty_ledger(_session_engine)
    return _session_engine


def _clear_ledger_keys(client: redis.Redis) -> None:
    for key in client.scan_iter(LEDGER_KEYS):
        client.delete(key)


@pytest.fixture
def ledger_redis() -> Iterator[redis.Redis]:
    """The session's Redis database, without ledger keys before and after each test."""
    client = redis.Redis.from_url(REDIS_TEST_URL)
    _clear_ledger_keys(client)
    yield client
    _clear_ledger_keys(client)
    client.close()
