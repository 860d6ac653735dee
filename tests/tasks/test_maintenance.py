"""Maintenance tasks called as plain functions against real PostgreSQL and Redis database 12."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import redis
from sqlalchemy import Engine, func, select

import tasks.maintenance as maintenance
from aipool.ledger.models import DailyUsage, UsageLogRow
from aipool.ledger.record import UsageRecord
from aipool.ledger.testing import empty_ledger, ledger_engine
from aipool.ledger.usage_log import UsageLog
from tests.support.attempts import SimulatedPool, begin, header, usage
from tests.support.shared_servers import database_named, redis_db


@pytest.fixture(scope="module")
def _engine() -> Iterator[Engine]:
    engine = ledger_engine(database_named("ledger"))
    yield engine
    engine.dispose()


@pytest.fixture
def wired(_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Engine, redis.Redis]]:
    """The tasks' engine and Redis replaced by the test database and the test Redis's db 12."""
    client = redis.Redis.from_url(redis_db(12))
    client.flushdb()
    empty_ledger(_engine)
    monkeypatch.setattr(maintenance, "default_engine", lambda: _engine)
    monkeypatch.setattr(maintenance, "_redis", lambda: client)
    monkeypatch.setattr(maintenance, "notifiers_from_env", lambda: [])
    yield _engine, client
    client.flushdb()
    client.close()


def test_given_pending_usage_when_drain_and_rollup_tasks_run_then_tables_fill(
    wired: tuple[Engine, redis.Redis],
) -> None:
    # Given
    engine, client = wired
    UsageLog(client).record(UsageRecord("t-1", 0, "gemini", "m", "ok", True, input_tokens=10))
    # When
    drained = maintenance.drain_ledger.run()
    groups = maintenance.rollup_today.run()
    checks = maintenance.budget_checks.run()
    # Then
    assert drained["written"] == 1 and drained["pending"] == 0
    assert groups == 1
    assert checks == []
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(UsageLogRow)).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(DailyUsage)).scalar_one() == 1


def test_given_closing_tasks_when_run_then_they_complete(wired: tuple[Engine, redis.Redis]) -> None:
    assert maintenance.rollup_yesterday.run() == 0
    assert maintenance.rollup_current_month.run() == 0
    assert maintenance.rollup_last_month.run() == 0
    assert maintenance.daily_budget_report.run() == {}


def test_given_a_call_whose_worker_died_when_the_sweep_runs_then_it_is_booked_at_its_estimate(
    wired: tuple[Engine, redis.Redis], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a Gemini call begun 10 minutes ago whose worker died (its lease is long over)
    engine, client = wired
    pool = SimulatedPool(client, now=time.time() - 600)
    book = pool.worker()
    h = header(tokens=250)
    begin(book, h, owner="dead", bound=30.0)
    pool.time.now = time.time()
    monkeypatch.setattr("workers.runtime.attempt_book", lambda: book)
    # When: beat's sweep runs, and the ledger is drained
    swept = maintenance.sweep_attempts.run()
    maintenance.drain_ledger.run()
    # Then: the call is abandoned, charged its estimate, and the ledger has its estimated row
    assert swept == 1
    with engine.connect() as conn:
        row = conn.execute(select(UsageLogRow)).one()
    assert (row.outcome, row.input_tokens + row.output_tokens, row.estimated) == (
        "abandoned",
        250,
        True,
    )
    assert usage(book) == (1, 250)


def test_given_a_run_time_when_tasks_compute_today_then_it_is_the_taipei_day(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIPOOL_TIMEZONE", raising=False)

    class _Clock(datetime):
        @classmethod
        def now(cls, tz: object = None) -> _Clock:  # type: ignore[override]
            return cls(2026, 3, 14, 16, 0, 0, tzinfo=UTC)  # 00:00 on March 15 in Taipei

    monkeypatch.setattr(maintenance, "datetime", _Clock)
    assert maintenance._today().isoformat() == "2026-03-15"
