"""UsageLog and drain(): one row per attempt, none lost while the database is away."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from decimal import Decimal

import redis
from sqlalchemy import Engine, func, select

from aipool.ledger.db import make_engine
from aipool.ledger.models import UsageLogRow
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import (
    DEAD_KEY,
    LOCK_KEY,
    PENDING_KEY,
    UsageLog,
    _row,
    _store,
    drain,
)

# Port 1 on loopback refuses connections: an honest "database is down" without touching the
# shared server.
DOWN_URL = "postgresql+psycopg://postgres@127.0.0.1:1/aipool_test_ledger"


def _record(request_id: str, attempt: int = 0, **kw: object) -> UsageRecord:
    fields: dict[str, object] = {
        "provider": "gemini",
        "model": "gemini-2.5-flash",
        "outcome": "ok",
        "success": True,
        "input_tokens": 100,
        "output_tokens": 20,
        "latency_ms": 300,
        "cost_usd": Decimal("0.00012"),
    }
    fields.update(kw)
    return UsageRecord(request_id, attempt, **fields)  # type: ignore[arg-type]


def _rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(UsageLogRow)).scalar_one())


def test_given_a_record_when_recorded_then_it_is_one_fast_push(ledger_redis: redis.Redis) -> None:
    # Given
    log = UsageLog(ledger_redis)
    # When
    started = time.perf_counter()
    for i in range(200):
        assert log.record(_record(f"r{i}"))
    per_call_ms = (time.perf_counter() - started) * 1000 / 200
    # Then: no database on the answer's path; a push costs well under the few-ms budget
    assert log.pending() == 200
    assert per_call_ms < 3


def test_given_a_redelivered_attempt_when_drained_then_one_row(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given: the same (request_id, attempt) recorded twice, as after a redelivery
    log = UsageLog(ledger_redis)
    log.record(_record("req-dup", 1))
    log.record(_record("req-dup", 1))
    log.record(_record("req-dup", 2))
    # When
    result = drain(ledger_redis, engine)
    again = drain(ledger_redis, engine)
    # Then
    assert _rows(engine) == 2
    assert (result.written, result.duplicates, result.pending) == (2, 1, 0)
    assert again.written == 0


def test_given_the_database_down_when_drained_then_records_wait_and_arrive_later(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given: 1,200 records (three batches) and a database that refuses connections
    log = UsageLog(ledger_redis)
    for i in range(1200):
        log.record(_record(f"req-{i}", i % 3))
    down = make_engine(DOWN_URL, connect_args={"connect_timeout": 1})
    # When: draining while it is down, twice
    failed = [drain(ledger_redis, down), drain(ledger_redis, down)]
    down.dispose()
    # Then: nothing is lost, nothing is written, the error is reported
    assert all(r.error and r.written == 0 for r in failed)
    assert log.pending() == 1200
    # When: the database is back
    result = drain(ledger_redis, engine)
    # Then: every record arrives exactly once and Redis is empty
    assert result.written == 1200
    assert _rows(engine) == 1200
    assert log.pending() == 0


def test_given_a_drainer_died_after_commit_when_drained_again_then_no_duplicates(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given: a drainer inserted a batch and crashed before trimming it from Redis
    log = UsageLog(ledger_redis)
    records = [_record(f"crash-{i}") for i in range(50)]
    for rec in records:
        log.record(rec)
    _store(engine, [_row(r) for r in records])
    # When
    result = drain(ledger_redis, engine)
    # Then
    assert _rows(engine) == 50
    assert (result.written, result.duplicates, result.pending) == (0, 50, 0)


def test_given_another_drainer_holds_the_lock_when_drained_then_it_skips(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given
    UsageLog(ledger_redis).record(_record("locked"))
    ledger_redis.set(LOCK_KEY, "someone-else", px=10_000)
    # When
    result = drain(ledger_redis, engine)
    # Then
    assert result.skipped
    assert result.pending == 1
    assert ledger_redis.get(LOCK_KEY) == b"someone-else"


def test_given_a_garbled_record_when_drained_then_it_goes_to_dead_letters_and_others_pass(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given
    log = UsageLog(ledger_redis)
    log.record(_record("good-1"))
    ledger_redis.lpush(PENDING_KEY, b"{not json")
    log.record(_record("good-2"))
    # When
    result = drain(ledger_redis, engine)
    # Then
    assert (result.written, result.dead, result.pending) == (2, 1, 0)
    assert ledger_redis.lrange(DEAD_KEY, 0, -1) == [b"{not json"]


def test_given_a_secret_in_an_error_when_drained_then_the_row_holds_no_secret(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given
    rec = _record(
        "leaky",
        outcome="error",
        success=False,
        error_message="401 from https://api/v1?key=AIzaSyA1234567890abcdefghijklmnopqr",
    )
    UsageLog(ledger_redis).record(rec)
    # When
    drain(ledger_redis, engine)
    # Then
    with engine.connect() as conn:
        stored = conn.execute(select(UsageLogRow.error_message)).scalar_one()
    assert stored is not None and "AIza" not in stored
    assert b"AIza" not in b"".join(ledger_redis.lrange(PENDING_KEY, 0, -1))


def test_given_the_embedded_default_when_drained_then_sqlite_stores_once(
    ledger_redis: redis.Redis, tmp_path: object
) -> None:
    # Given: no DATABASE_URL, i.e. the SQLite file
    from aipool.ledger.db import migrate

    url = f"sqlite:///{tmp_path}/ledger.db"
    migrate(url)
    sqlite = make_engine(url)
    log = UsageLog(ledger_redis)
    log.record(_record("s-1", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    log.record(_record("s-1", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    # When
    result = drain(ledger_redis, sqlite)
    # Then
    assert result.written == 1
    with sqlite.connect() as conn:
        created = conn.execute(select(UsageLogRow.created_at)).scalar_one()
    assert created == datetime(2026, 1, 1, tzinfo=UTC)
    sqlite.dispose()
