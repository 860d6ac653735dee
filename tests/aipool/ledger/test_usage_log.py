"""UsageLog and drain(): one row per attempt, none lost while the database is away."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
import redis
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

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
    store_now,
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


# -- every field stores ------------------------------------------------------------------------


def _stored(engine: Engine) -> list[UsageLogRow]:
    with Session(engine) as session:
        return list(session.scalars(select(UsageLogRow).order_by(UsageLogRow.request_id)))


def test_given_nul_surrogates_and_overlong_text_when_recorded_and_drained_then_the_row_is_stored(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given: a record whose text fields hold what PostgreSQL or UTF-8 refuse, and too much of it
    rec = _record(
        "req-\x00hostile",
        provider="gem\x00ini" + "p" * 40,
        model="m\ud800" + "m" * 200,
        outcome="error",
        success=False,
        error_message="boom\x00 \udfff",
        user_id="svc\x00-7\ud800" + "u" * 300,
        intent="CHAT\x00" + "i" * 100,
        route_chain="ollama>gemini\udc80" + ">static" * 100,
        route_reason="rule\x00 matched \ud83d\ude00",
    )
    log = UsageLog(ledger_redis)
    # When
    queued = log.record(rec)
    result = drain(ledger_redis, engine)
    # Then: queued, stored whole-row, nothing in the dead letters
    assert queued
    assert (result.written, result.dead, result.pending) == (1, 0, 0)
    assert ledger_redis.llen(DEAD_KEY) == 0
    (row,) = _stored(engine)
    # NULs gone, lone surrogates replaced, each value cut to its column, a split pair joined
    assert row.request_id == "req-hostile"
    assert row.user_id == ("svc-7\ufffd" + "u" * 300)[:128]
    assert row.model.startswith("m\ufffdm") and len(row.model) == 128
    assert len(row.provider) == 32 and "\x00" not in row.provider
    assert row.intent == ("CHAT" + "i" * 100)[:64]
    assert row.route_chain is not None and len(row.route_chain) == 400
    assert row.route_reason == "rule matched 😀"
    assert row.error_message == "boom \ufffd"


def test_given_a_record_queued_unclean_by_an_older_writer_when_drained_then_it_is_stored(
    ledger_redis: redis.Redis, engine: Engine
) -> None:
    # Given: JSON in the pending list that decodes to a NUL and a lone surrogate in user_id
    good = _record("older-good")
    unclean = json.loads(_record("older", user_id="x").to_json())
    unclean["user_id"] = "svc\x00\ud800"
    ledger_redis.lpush(PENDING_KEY, json.dumps(unclean))  # ensure_ascii escapes both
    UsageLog(ledger_redis).record(good)
    # When
    result = drain(ledger_redis, engine)
    # Then: both stored, the unclean one cleaned, nothing dead and nothing stuck
    assert (result.written, result.dead, result.pending) == (2, 0, 0)
    assert [r.user_id for r in _stored(engine)] == ["svc\ufffd", None]


# -- two rows for one attempt: the paid outcome wins -------------------------------------------


def _failed(request_id: str, attempt: int = 0, **kw: object) -> UsageRecord:
    fields: dict[str, object] = {
        "outcome": "error",
        "success": False,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": Decimal(0),
        "error_message": "timeout: no answer in 30s",
    }
    fields.update(kw)
    return _record(request_id, attempt, **fields)


def _only_row(engine: Engine) -> UsageLogRow:
    (row,) = _stored(engine)
    return row


def test_given_an_error_row_stored_when_the_paid_ok_row_arrives_then_it_replaces_it(
    ledger_redis: redis.Redis, any_engine: Engine
) -> None:
    # Given: a redelivered hop: the attempt's error row is already in the ledger
    log = UsageLog(ledger_redis)
    log.record(_failed("redelivered", 1))
    first = drain(ledger_redis, any_engine)
    stored_id = _only_row(any_engine).id
    # When: the run that was paid for records the same attempt as ok
    log.record(_record("redelivered", 1, cost_usd=Decimal("0.000420")))
    second = drain(ledger_redis, any_engine)
    # Then: one row, the ok one, with its tokens and cost (and the row keeps its id)
    row = _only_row(any_engine)
    assert (row.outcome, row.success, row.error_message) == ("ok", True, None)
    assert (row.input_tokens, row.output_tokens, row.cost_usd) == (100, 20, Decimal("0.000420"))
    assert row.id == stored_id
    assert (first.written, second.written, second.replaced, second.duplicates) == (1, 0, 1, 0)


def test_given_an_ok_row_stored_when_an_error_row_arrives_then_the_ok_row_stays(
    ledger_redis: redis.Redis, any_engine: Engine
) -> None:
    log = UsageLog(ledger_redis)
    log.record(_record("paid-first", 0))
    drain(ledger_redis, any_engine)
    log.record(_failed("paid-first", 0))
    result = drain(ledger_redis, any_engine)
    row = _only_row(any_engine)
    assert (row.outcome, row.success, row.cost_usd) == ("ok", True, Decimal("0.000120"))
    assert (result.written, result.replaced, result.duplicates) == (0, 0, 1)


def test_given_two_ok_rows_for_one_attempt_then_the_first_stays(
    ledger_redis: redis.Redis, any_engine: Engine
) -> None:
    log = UsageLog(ledger_redis)
    log.record(_record("twice-ok", 0, cost_usd=Decimal("0.000001")))
    drain(ledger_redis, any_engine)
    log.record(_record("twice-ok", 0, cost_usd=Decimal("0.000002")))
    result = drain(ledger_redis, any_engine)
    assert _only_row(any_engine).cost_usd == Decimal("0.000001")
    assert (result.written, result.replaced, result.duplicates) == (0, 0, 1)


@pytest.mark.parametrize(
    ("order", "winner"),
    [
        (["error", "ok"], "ok"),
        (["ok", "error"], "ok"),
        (["error", "ok", "error", "ok"], "ok#1"),
        (["error", "circuit_open"], "error"),
    ],
)
def test_given_rows_of_one_attempt_in_one_batch_then_the_paid_outcome_wins(
    ledger_redis: redis.Redis, any_engine: Engine, order: list[str], winner: str
) -> None:
    # Given: several records of one attempt waiting in the same batch, oldest first
    log = UsageLog(ledger_redis)
    for i, outcome in enumerate(order):
        tag = f"{outcome}#{i}"
        if outcome == "ok":
            log.record(_record("batch", 2, route_reason=tag))
        else:
            log.record(_failed("batch", 2, outcome=outcome, route_reason=tag))
    # When
    result = drain(ledger_redis, any_engine)
    # Then: one row: the first success, or else the first row
    row = _only_row(any_engine)
    assert row.route_reason is not None and row.route_reason.startswith(winner)
    assert (result.written, result.duplicates, result.dead) == (1, len(order) - 1, 0)


class _RedisGone:
    """A Redis that refuses every write, as when it restarted or is unreachable."""

    def lpush(self, *args: object) -> int:
        raise redis.ConnectionError("Redis went away")


def test_given_redis_unreachable_when_a_paid_call_is_recorded_then_it_lands_in_the_ledger(
    any_engine: Engine,
) -> None:
    # Given a usage log whose Redis is gone, with the ledger as its fallback
    log = UsageLog(_RedisGone(), fallback=lambda rec: store_now(any_engine, rec))  # type: ignore[arg-type]
    # When a paid call is recorded
    kept = log.record(_record("paid-while-redis-down", input_tokens=120, output_tokens=30))
    # Then it is stored in the ledger directly, with its tokens, for the quota restore to read
    assert kept is True
    row = _only_row(any_engine)
    assert (row.request_id, row.input_tokens, row.output_tokens) == (
        "paid-while-redis-down",
        120,
        30,
    )


def test_given_redis_unreachable_and_no_fallback_then_the_record_is_reported_lost() -> None:
    assert UsageLog(_RedisGone()).record(_record("lost")) is False  # type: ignore[arg-type]


def test_given_a_task_id_reused_for_another_request_then_each_journey_keeps_its_rows(
    ledger_redis: redis.Redis, any_engine: Engine
) -> None:
    # Given: a producer that reused task id "reused" for a second request: the pool names the
    # two requests' journeys apart, and both first attempts were paid
    log = UsageLog(ledger_redis)
    log.record(_record("reused", 0, journey_id="journey-a", input_tokens=10))
    log.record(_record("reused", 0, journey_id="journey-b", input_tokens=30))
    # When: they are drained
    result = drain(ledger_redis, any_engine)
    # Then: both paid calls are in the ledger, under the task id the producer holds
    with Session(any_engine) as session:
        rows = session.scalars(select(UsageLogRow).order_by(UsageLogRow.input_tokens)).all()
    assert [(r.request_id, r.journey_id, r.input_tokens) for r in rows] == [
        ("reused", "journey-a", 10),
        ("reused", "journey-b", 30),
    ]
    assert result.written == 2


def test_given_a_record_without_a_journey_id_then_its_request_id_names_its_journey() -> None:
    # Records queued by writers older than journey ids carry none: their task id stands in
    record = UsageRecord.from_json(
        json.dumps({**json.loads(_record("old").to_json()), "journey_id": ""})
    )
    assert record.journey_id == "old"
    assert not record.estimated


def test_given_two_calls_of_one_attempt_then_each_is_a_row_and_each_once(
    ledger_redis: redis.Redis, any_engine: Engine
) -> None:
    # Given: two calls of one attempt (a Redis restarted empty under the first), the first
    # recorded twice (its abandoned estimate, then its late answer) and the second once
    log = UsageLog(ledger_redis)
    log.record(_failed("restart", 1, outcome="abandoned", call_id="first", estimated=True))
    log.record(_record("restart", 1, call_id="first", input_tokens=90))
    log.record(_record("restart", 1, call_id="second", input_tokens=95))
    # When
    result = drain(ledger_redis, any_engine)
    # Then: one row per call, the paid outcome of each
    rows = sorted(_stored(any_engine), key=lambda r: r.call_id)
    assert [(r.call_id, r.outcome, r.input_tokens) for r in rows] == [
        ("first", "ok", 90),
        ("second", "ok", 95),
    ]
    assert (result.written, result.duplicates) == (2, 1)
