"""Names on the shared test servers, derived from the run's own Redis and database URLs.

Two runs given different ``AIPOOL_TEST_REDIS_URL`` (another Redis server) and
``AIPOOL_TEST_DATABASE_URL`` (another database name) touch nothing of each other: every Redis
database and scratch ledger database a test uses is named from those two.

Only the server in ``AIPOOL_TEST_REDIS_URL`` separates runs, not its database number:
:func:`redis_db` replaces that number (the guards' and the attempt model's tests use database 11,
the maintenance tests 12, the result backend's 13), so two runs on one server with ``/13`` and
``/14`` share database 11 and flush each other's counters (the model test then fails on a quota
that holds another run's calls, or lost its own). Each run also needs a server of its own because
the attempt model's Redis restart runs ``SCRIPT FLUSH``, which is server-wide: another run's
script caught between redis-py's reload and its second ``EVALSHA`` raises ``NoScriptError``.
"""

from __future__ import annotations

import os

from sqlalchemy.engine import make_url

TEST_REDIS_URL = os.environ.get("AIPOOL_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
TEST_DATABASE_URL = os.environ.get(
    "AIPOOL_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/aipool_test"
)


def redis_db(db: int) -> str:
    """Database ``db`` of the run's test Redis server."""
    return TEST_REDIS_URL.rsplit("/", 1)[0] + f"/{db}"


def database_named(suffix: str) -> str:
    """``<the run's test database>_<suffix>``: a scratch database of this run only."""
    return f"{make_url(TEST_DATABASE_URL).database}_{suffix}"
