"""Recording usage without delaying answers, and draining it into the database without loss.

A worker calls ``UsageLog(redis).record(rec)`` after every attempt: one LPUSH of the record's JSON
(or none of its own: in a worker the record rides with the task's result write, see
:mod:`aipool.ledger.outbox`). ``drain()`` (a beat task every few seconds) moves pending
records into ``ai_usage_logs`` in batches:

1. read the oldest ``batch`` records (LRANGE from the tail; new records arrive at the head),
2. INSERT ... ON CONFLICT (journey_id, attempt, call_id) and commit: when two rows arrive for
   one call (a redelivered hop), the paid outcome wins: a success replaces a row that is not one, and
   otherwise the first row stays. The write takes the ledger clock first and numbers its rows
   (``ledger_seq``), so the roll-ups know exactly which rows they hold (:mod:`aipool.ledger.spend`),
3. only then trim exactly those records from the list (a Lua script that trims only while the
   drainer still owns its lock).

A crash between 2 and 3 leaves the records in Redis; the next drain inserts them again and the
unique key turns that into a no-op. A database that is down fails step 2: nothing is trimmed and
the records wait in Redis until it is back. One drainer runs at a time (a short Redis lock).
Records that cannot be parsed or stored move to a dead-letter list instead of blocking the rest.
Text fields are cleaned and cut to their columns before they are queued and again before they are
stored, so no value written into a record can send it there.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from sqlalchemy import Connection, Engine, Insert, String, and_, not_, select, tuple_
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError

from aipool.ledger.models import usage_logs
from aipool.ledger.outbox import Outbox
from aipool.ledger.record import UsageRecord, storable_text
from aipool.ledger.rollup import refresh_days
from aipool.ledger.spend import take_clock
from aipool.periods import local_day, pool_zone
from aipool.redis.lua import LuaScripts
from aipool.scrub import scrub as scrub_error

log = logging.getLogger(__name__)

PENDING_KEY = "aipool:ledger:pending"
DEAD_KEY = "aipool:ledger:dead"
LOCK_KEY = "aipool:ledger:drain-lock"
#: Long enough for one batch on a slow database; the lock is extended after every batch.
LOCK_TTL_MS = 30_000

_SCRIPTS = LuaScripts("aipool.ledger", "trim_if_owner", "release_lock")

# Text columns of ai_usage_logs and their widths (None: unbounded). Longer values are cut rather
# than failing a whole batch.
_TEXT_COLUMNS: dict[str, int | None] = {
    c.name: c.type.length for c in usage_logs.columns if isinstance(c.type, String)
}


class UsageLog:
    """The write side of the ledger used by workers: append a record to a Redis list.

    When Redis refuses the record, ``fallback`` (e.g. :func:`store_now` on the ledger's engine)
    gets it instead, so a call that was paid for is still accounted, and the quota restore, which
    rebuilds counters from the ledger, sees it.
    """

    def __init__(
        self,
        redis: Redis[Any],
        key: str = PENDING_KEY,
        fallback: Callable[[UsageRecord], bool] | None = None,
        outbox: Outbox | None = None,
    ) -> None:
        self._redis = redis
        self._key = key
        self._fallback = fallback
        self._outbox = outbox

    @property
    def key(self) -> str:
        """The Redis list records wait in."""
        return self._key

    def record(self, rec: UsageRecord) -> bool:
        """Queue ``rec`` for the database; never raises.

        While a task runs in this process and the log has an ``outbox``, the record is held there
        to ride with the task's result write (:mod:`aipool.ledger.outbox`); otherwise it is one
        LPUSH. The error message is scrubbed before it leaves the process, so no credential sits
        in Redis either, and every text field is made storable (:func:`storable`). Returns whether
        the record was kept (held, queued, or stored through the fallback).
        """
        clean = storable(rec)
        if self._outbox is not None and self._outbox.hold(clean):
            return True
        return self.push([clean])

    def push(self, records: list[UsageRecord]) -> bool:
        """Queue storable ``records`` with one LPUSH; when Redis refuses them, store each through
        the fallback. A record kept nowhere is logged whole (it holds no prompt text) so it can
        be replayed by hand. Returns whether every record was kept."""
        if not records:
            return True
        payloads = [rec.to_json() for rec in records]
        try:
            self._redis.lpush(self._key, *payloads)
            return True
        except RedisError:
            log.warning("%d usage record(s) not queued in Redis; storing directly", len(records))
        kept = True
        for rec, payload in zip(records, payloads, strict=True):
            try:
                if self._fallback is not None and self._fallback(rec):
                    continue
            except Exception:
                log.exception("usage record not stored directly either")
            log.error("usage record lost unless replayed: %s", payload)
            kept = False
        return kept

    def held(self) -> list[UsageRecord]:
        """The records held for this task, taken by a write that carries them (one on this
        log's Redis): when it fails, hand them to :meth:`missed`."""
        return self._outbox.take() if self._outbox is not None else []

    def missed(self, records: list[UsageRecord]) -> None:
        """Records a failed write carried: held again for the next write or the task's end."""
        if self._outbox is not None:
            self._outbox.give_back(records)

    def pending(self) -> int:
        """How many records wait to be drained."""
        return int(self._redis.llen(self._key))


@dataclass
class DrainResult:
    """What one ``drain()`` call did."""

    #: Rows inserted into ai_usage_logs.
    written: int = 0
    #: Stored rows of failed or skipped attempts replaced by the same attempt's success.
    replaced: int = 0
    #: Records removed from Redis because their (journey_id, attempt, call_id) already had the row that
    #: wins (stored, or earlier in the same batch).
    duplicates: int = 0
    #: Records moved to the dead-letter list.
    dead: int = 0
    #: Records still waiting in Redis afterwards.
    pending: int = 0
    #: Another drainer held the lock, so this call did nothing.
    skipped: bool = False
    #: Why the drain stopped early (e.g. the database is unreachable), if it did.
    error: str | None = None


def storable(rec: UsageRecord) -> UsageRecord:
    """``rec`` with its error message scrubbed and every text field fit for its column.

    NULs are dropped, lone surrogates replaced and values cut to the column's width, so a record
    never fails to store (or to be queued) because of what a producer or provider wrote into it.
    """
    changes: dict[str, Any] = {}
    error_message = scrub_error(rec.error_message)
    for name, width in _TEXT_COLUMNS.items():
        current = getattr(rec, name)
        value = error_message if name == "error_message" else current
        if isinstance(value, str):
            value = storable_text(value, width)
        if value is not current and value != current:
            changes[name] = value
    return replace(rec, **changes) if changes else rec


def _row(record: UsageRecord) -> dict[str, Any]:
    # Records queued by older writers were not cleaned yet; cleaning twice changes nothing.
    rec = storable(record)
    return {
        "id": rec.id,
        "request_id": rec.request_id,
        "journey_id": rec.journey_id,
        "attempt": rec.attempt,
        "call_id": rec.call_id,
        "provider": rec.provider,
        "model": rec.model,
        "input_tokens": rec.input_tokens,
        "output_tokens": rec.output_tokens,
        "latency_ms": rec.latency_ms,
        "success": rec.success,
        "error_message": rec.error_message,
        "user_id": rec.user_id,
        "intent": rec.intent,
        "complexity": rec.complexity,
        "route_chain": rec.route_chain,
        "route_reason": rec.route_reason,
        "outcome": rec.outcome,
        "fallback_position": rec.fallback_position,
        "cost_usd": rec.cost_usd,
        "estimated": rec.estimated,
        "service": rec.service,
        "saved_usd": rec.saved_usd,
        "trace_id": rec.trace_id,
        "created_at": rec.created_at,
    }


def insert_keeping_success(engine: Engine) -> Insert:
    """INSERT into ai_usage_logs where, for one (journey_id, attempt, call_id), the paid outcome
    wins.

    A redelivered hop can record one attempt twice, e.g. an ``error`` row from a run cut short
    and then the ``ok`` row of the call that was paid for. An incoming success replaces a stored
    row that is not one (keeping the stored row's id); a row that is not a success never replaces
    anything, and of two successes the first stays. RETURNING yields the id of every row inserted
    or replaced: a replaced row returns the stored id, not the incoming one.
    """
    table = usage_logs
    # Both dialects spell the upsert alike; only where ``insert`` comes from differs.
    if engine.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as dialect_insert
    elif engine.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as dialect_insert  # type: ignore[assignment]
    else:
        raise NotImplementedError(f"ledger does not support the {engine.dialect.name} dialect")
    stmt = dialect_insert(table)
    replacement = {
        c.name: stmt.excluded[c.name]
        for c in table.columns
        if c.name not in ("id", "journey_id", "attempt", "call_id")
    }
    return stmt.on_conflict_do_update(
        index_elements=["journey_id", "attempt", "call_id"],
        set_=replacement,
        where=and_(stmt.excluded.success, not_(table.c.success)),
    ).returning(table.c.id)


def _winners(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (journey_id, attempt, call_id) of a batch, chosen as the database would choose.

    PostgreSQL refuses an upsert that touches one row twice in a statement, so two records of
    one attempt in the same batch are settled here: the first success, else the first row.
    """
    kept: dict[tuple[str, int, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["journey_id"], row["attempt"], row["call_id"])
        held = kept.get(key)
        if held is None or (row["success"] and not held["success"]):
            kept[key] = row
    return list(kept.values())


def _is_connection_problem(exc: SQLAlchemyError) -> bool:
    return isinstance(exc, OperationalError) or (
        isinstance(exc, DBAPIError) and exc.connection_invalidated
    )


@dataclass
class _Stored:
    """What one upsert of rows did."""

    inserted: int = 0
    replaced: int = 0
    rejected: list[dict[str, Any]] = field(default_factory=list)

    def add(self, other: _Stored) -> None:
        self.inserted += other.inserted
        self.replaced += other.replaced
        self.rejected.extend(other.rejected)


def _store(engine: Engine, rows: list[dict[str, Any]]) -> _Stored:
    """Upsert ``rows`` (at most one per attempt); count inserts, replacements and rejections.

    Connection problems propagate (the batch stays in Redis). A batch the database rejects for
    its content is retried row by row, so one bad record cannot block the others.
    """
    stmt = insert_keeping_success(engine)
    try:
        with engine.begin() as conn:
            ids = _upsert_numbered(conn, stmt, rows)
        inserted = sum(1 for row in rows if row["id"] in ids)
        return _Stored(inserted=inserted, replaced=len(ids) - inserted)
    except SQLAlchemyError as exc:
        if _is_connection_problem(exc):
            raise
        if len(rows) == 1:
            return _Stored(rejected=rows)
    stored = _Stored()
    for row in rows:
        stored.add(_store(engine, [row]))
    return stored


def _upsert_numbered(conn: Connection, stmt: Insert, rows: list[dict[str, Any]]) -> set[Any]:
    """Upsert ``rows`` under the ledger clock, numbered with this write's ``ledger_seq``; returns
    the ids inserted or replaced.

    A success replacing a stored row that the roll-ups already hold (a redelivered hop's paid
    answer after its error row was rolled up) recomputes that row's day in the same transaction,
    so no instant sees the old version in the roll-up and the new one among the pending rows
    (:mod:`aipool.ledger.spend`).
    """
    seq, rolled_through = take_clock(conn)
    t = usage_logs.c
    keys = [(row["journey_id"], row["attempt"], row["call_id"]) for row in rows if row["success"]]
    rolled: dict[Any, datetime] = {}
    if keys:
        rolled = dict(
            conn.execute(
                select(t.id, t.created_at).where(
                    tuple_(t.journey_id, t.attempt, t.call_id).in_(keys),
                    not_(t.success),
                    t.ledger_seq <= rolled_through,
                )
            ).all()
        )
    ids = set(conn.execute(stmt, [{**row, "ledger_seq": seq} for row in rows]).scalars())
    replaced = [created for row_id, created in rolled.items() if row_id in ids]
    if replaced:
        zone = pool_zone()
        days = {local_day(created, zone) for created in replaced}
        refresh_days(conn, days, zone, rolled_through, datetime.now(UTC))
    return ids


def store_now(engine: Engine, rec: UsageRecord) -> bool:
    """Write one record straight into the ledger (the path for when Redis is unreachable);
    returns whether the database took it (inserted, replaced, or already there)."""
    stored = _store(engine, [_row(storable(rec))])
    return not stored.rejected


def drain(
    redis: Redis[Any],
    engine: Engine,
    batch: int = 500,
    *,
    key: str = PENDING_KEY,
    max_batches: int = 20,
) -> DrainResult:
    """Move pending usage records from Redis into the database; see the module docstring.

    Stops after ``max_batches`` batches so one call stays short (the next call continues), when
    the list is empty, or at the first database connection error (the records stay in Redis).
    Never raises for a database that is down; the error is in the result.
    """
    result = DrainResult()
    token = uuid.uuid4().hex
    lock_key = f"{key}:lock" if key != PENDING_KEY else LOCK_KEY
    if not redis.set(lock_key, token, nx=True, px=LOCK_TTL_MS):
        result.skipped = True
        result.pending = int(redis.llen(key))
        return result
    scripts = _SCRIPTS.for_client(redis)
    trim = scripts["trim_if_owner"]
    try:
        for _ in range(max_batches):
            raw: list[bytes] = redis.lrange(key, -batch, -1)
            if not raw:
                break
            rows: list[dict[str, Any]] = []
            dead: list[bytes | str] = []
            # LRANGE lists the tail last; reverse so the oldest record is inserted first.
            for item in reversed(raw):
                try:
                    rows.append(_row(UsageRecord.from_json(item)))
                except (ValueError, KeyError, TypeError) as exc:
                    log.error("unreadable usage record moved to %s: %s", DEAD_KEY, exc)
                    dead.append(item)
            winners = _winners(rows)
            try:
                stored = _store(engine, winners) if winners else _Stored()
            except SQLAlchemyError as exc:
                result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                log.warning("ledger drain stopped, records stay in Redis: %s", result.error)
                break
            for row in stored.rejected:
                log.error("usage record rejected by the database: %s", row["request_id"])
                dead.append(_to_json(row))
            if dead:
                redis.lpush(DEAD_KEY, *dead)
            if not trim(keys=[key, lock_key], args=[token, len(raw), LOCK_TTL_MS]):
                result.error = "drain lock lost; another drainer continues"
                break
            result.written += stored.inserted
            result.replaced += stored.replaced
            result.dead += len(dead)
            result.duplicates += (
                len(rows) - len(stored.rejected) - stored.inserted - stored.replaced
            )
            if len(raw) < batch:
                break
    finally:
        scripts["release_lock"](keys=[lock_key], args=[token])
        result.pending = int(redis.llen(key))
    return result


def _to_json(row: dict[str, Any]) -> str:
    return UsageRecord(**row).to_json()
