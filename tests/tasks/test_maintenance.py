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
    rolled = maintenance.rollup_ledger.run()
    checks = maintenance.budget_checks.run()
    # Then
    assert drained["written"] == 1 and drained["pending"] == 0
    assert rolled["days"] == [maintenance._today().isoformat()]
    assert checks == []
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(UsageLogRow)).scalar_one() == 1
        assert conn.execute(select(func.count()).select_from(DailyUsage)).scalar_one() == 1


def test_given_an_earlier_beats_roll_up_names_when_run_then_each_is_the_one_roll_up(
    wired: tuple[Engine, redis.Redis],
) -> None:
    # Given: a row of today waiting to be rolled up
    _, client = wired
    UsageLog(client).record(UsageRecord("t-1", 0, "gemini", "m", "ok", True, input_tokens=10))
    maintenance.drain_ledger.run()
    # When: an earlier release's beat sends its four roll-up tasks
    first = maintenance.rollup_yesterday.run()
    later = [
        maintenance.rollup_today.run(),
        maintenance.rollup_current_month.run(),
        maintenance.rollup_last_month.run(),
    ]
    # Then: the first rolls up what is pending, the others find nothing new
    assert first["days"] == [maintenance._today().isoformat()]
    assert [r["days"] for r in later] == [[], [], []]
    assert maintenance.daily_budget_report.run() == {}


def test_given_a_call_whose_worker_died_when_the_sweep_runs_then_it_is_booked_at_its_estimate(
    wired: tuple[Engine, redis.Redis], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a Gemini call begun 10 minutes ago whose worker died (its lease is long over)
    engine, client = wired
    began = time.time() - 600
    pool = SimulatedPool(client, now=began)
    book = pool.worker()
    h = header(tokens=250)
    begin(book, h, owner="dead", bound=30.0)
    pool.time.now = time.time()
    monkeypatch.setattr("tasks.maintenance.attempt_book", lambda: book)
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
    # And the quota counts it on the day it began: read that day's counters (ten minutes ago is
    # yesterday in the pool's zone in the first ten minutes after its midnight)
    pool.time.now = began
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


def test_given_beat_and_the_maintenance_worker_when_routines_run_then_flower_sees_no_event_of_them(
    tmp_path,
) -> None:  # type: ignore[no-untyped-def]
    from celery import Celery

    from aipool.ledger.db import migrate
    from schedules.beat import beat_schedule
    from tests.conftest import worker_env
    from tests.support.beat import Beat
    from tests.support.events import heard_events
    from tests.support.pool import Worker
    from tests.support.services import RedisServer
    from tests.support.waiting import eventually

    # Given beat and a maintenance worker on a Redis of their own, and a listener to the task
    # events Flower would get
    server = RedisServer().start()
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(ledger)
    env = worker_env(
        REDIS_URL=server.url,
        CELERY_BROKER_URL=server.url,
        CELERY_RESULT_BACKEND=server.url,
        DATABASE_URL=ledger,
    )
    producer = Celery("events-listener", broker=server.url, backend=server.url)
    worker = Worker(env, queues=("maintenance", "router"), concurrency=1)
    beat = None
    try:
        worker.wait_ready(producer)
        with heard_events(producer) as events:
            beat = Beat(env)
            # When the drain has run a few times (every 5 s)
            eventually(lambda: worker.log().count("aipool.drain_ledger") >= 2, 30, "drain runs")
            # and a task that is not a routine runs too (the listener hears task events)
            producer.send_task("ai.ping", queue="router").get(timeout=10)
            eventually(lambda: any(e["type"] == "task-succeeded" for e in events), 10, "ping")
    finally:
        if beat is not None:
            beat.stop()
        worker.stop()
        producer.close()
        server.stop()
    # Then no task event names a routine of beat's: Flower's task list holds the ping only
    routines = {entry["task"] for entry in beat_schedule.values()}
    named = {str(e.get("name")) for e in events if str(e["type"]).startswith("task-")}
    assert "ai.ping" in named
    assert not named & routines, named & routines
    task_ids = {e.get("uuid") for e in events if str(e["type"]).startswith("task-")}
    assert len(task_ids) == 1, events


def test_given_redis_lost_the_months_spend_when_restored_then_budgets_count_what_was_spent(
    wired: tuple[Engine, redis.Redis],
) -> None:
    # Given: the ledger holds this month's paid calls of two services, and Redis lost its data
    from decimal import Decimal

    from aipool.attempt.layout import spend_key
    from aipool.ledger.usage_log import store_now
    from aipool.periods import month_of, pool_zone

    engine, client = wired
    now = datetime.now(UTC)
    for i, (service, cost) in enumerate(
        (("batch", "0.004"), ("triage", "0.001"), ("batch", "0.002"))
    ):
        store_now(
            engine,
            UsageRecord(
                f"r{i}",
                0,
                "gemini",
                "gemini-2.5-flash",
                "ok",
                True,
                10,
                10,
                cost_usd=Decimal(cost),
                service=service,
                created_at=now,
            ),
        )
    # When: beat's restore runs
    maintenance.restore_quota_counters.run()
    # Then: the month's spend in Redis is the ledger's, pool-wide and per service
    key = spend_key(month_of(now.timestamp(), pool_zone()).label)
    spend = {k.decode(): int(v) for k, v in client.hgetall(key).items()}
    assert spend == {"all": 7_000, "svc:batch": 6_000, "svc:triage": 1_000}
    # And a second run leaves a spend Redis holds alone (it includes calls in flight)
    client.hincrby(key, "all", 500)
    maintenance.restore_quota_counters.run()
    assert int(client.hget(key, "all")) == 7_500
