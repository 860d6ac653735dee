"""The ledger's PostgreSQL stopped under load: answers keep flowing, no usage row is lost.

Workers never write the database on the answer path: a usage record is one LPUSH to Redis, and
beat's ``aipool.drain_ledger`` (every 5 s) moves the spool into PostgreSQL. While the database
is down the drain fails and the records wait in Redis; once it is back they all arrive, once, and
none is dead-lettered.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from celery.result import AsyncResult
from sqlalchemy import Engine

from aipool.ledger.db import make_engine
from aipool.ledger.testing import scratch_database
from aipool.simulator import Simulator
from tests.conftest import worker_env
from tests.support.accounting import dead_letters, ledger_rows, rows_trail, spooled, trail
from tests.support.beat import Beat
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.producer import Outcome, Producer
from tests.support.requests import CRITICAL, QUESTION
from tests.support.services import PostgresServer, RedisServer
from tests.support.sizes import sized_s
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

#: How long PostgreSQL stays down (``AIPOOL_DB_OUTAGE_SECONDS``; a minute under make soak).
OUTAGE_S = sized_s(8, 60, "AIPOOL_DB_OUTAGE_SECONDS")
#: One request every this many seconds, alternating a local and a paid provider.
PACE_S = 0.25
REQUESTS = (QUESTION, CRITICAL)
WORKER_ENV = {"AIPOOL_CLAUDE_RPM": "unlimited"}


def _load(send: Producer, seconds: float) -> list[Outcome]:
    """Send a request every PACE_S for ``seconds``, then wait for every answer."""
    results: list[AsyncResult] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        results.append(send.send(REQUESTS[len(results) % len(REQUESTS)]))
        time.sleep(PACE_S)
    return send.collect(results, timeout=60)


def test_postgres_stopped_under_load_answers_flow_and_every_usage_row_arrives_after(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    postgres_server: PostgresServer,
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
) -> None:
    # Given a worker and beat on a private Redis, the ledger on a private PostgreSQL, and
    # requests answered and drained while the database is up
    url = scratch_database("aipool_ledger", server=postgres_server.server_url)
    redis = redis_server()
    client = redis.client()
    spawn_worker(redis.url, concurrency=2, DATABASE_URL=url, **WORKER_ENV)
    beat = Beat(worker_env(REDIS_URL=redis.url, DATABASE_URL=url, **WORKER_ENV))
    engine: Engine = make_engine(url)
    send = producer(redis.url)
    try:
        before = _load(send, 2)
        eventually(lambda: not client.llen("aipool:ledger:pending"), 30, "spool drained by beat")
        # When PostgreSQL stops for the outage, with requests arriving all along
        postgres_server.stop()
        stopped_at = time.monotonic()
        during = _load(send, OUTAGE_S)
        waiting = len(spooled(client))
        assert not postgres_server.is_ready()
        postgres_server.start()
        back_at = time.monotonic()
        # Then every request sent while the database was down was answered
        scenario = f"PostgreSQL stopped {OUTAGE_S:g} s under load"
        answered = [o for o in during if o.answered]
        record_figure(
            scenario, "requests answered during the outage", f"{len(answered)}/{len(during)}"
        )
        record_figure(scenario, "usage records waiting in Redis", waiting)
        assert len(answered) == len(during) and answered
        assert all(o.answer and o.answer["status"] == "ok" for o in during)
        assert stopped_at + OUTAGE_S <= back_at
        # And once it is back, beat's drain brings every attempt's row, once, none dead-lettered
        outcomes = before + during
        ids = [o.task_id for o in outcomes]
        expected = sum(len(trail(o.answer or {})) for o in outcomes)
        eventually(
            lambda: len(ledger_rows(engine, ids)) == expected, 60, "every usage row", interval=0.5
        )
        record_figure(
            scenario, "database back to last row stored", round(time.monotonic() - back_at, 1), "s"
        )
        rows = ledger_rows(engine, ids)
        assert all(rows_trail(rows, o.task_id) == trail(o.answer or {}) for o in outcomes)
        assert dead_letters(client) == 0
        assert not spooled(client)
        record_figure(scenario, "usage rows lost or dead-lettered", 0)
    finally:
        beat.stop()
        engine.dispose()
