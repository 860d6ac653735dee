"""Ledger tables as SQLAlchemy 2 typed models: raw usage, daily and monthly roll-ups, the ledger
clock, alert events.

The Alembic migrations in ``aipool/ledger/migrations`` create these tables; the models describe
them for queries. Timestamps are stored timezone-aware and always come back in UTC, SQLite included.
"""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    Index,
    Integer,
    Numeric,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    Uuid,
    func,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

#: Money is stored in units of a picodollar (10^-12 USD): a call's exact cost at any price with at
#: most nine decimals per 1,000 tokens, so sums never drift (ADR-006's cheapest call, 11 tokens at
#: $0.075 per million, is $0.000000825). Rounded only when shown.
MONEY_PLACES = 12
_PICO = Decimal(10) ** -MONEY_PLACES


class Money(TypeDecorator[Decimal]):
    """Exact USD amounts: ``NUMERIC(24, 12)`` on PostgreSQL; a whole number of picodollars
    (``BIGINT``) on SQLite, which has no decimal type and would otherwise store a float.

    Read back as :class:`~decimal.Decimal` on both, sums included (SQLite adds integers exactly;
    its 64-bit sum holds $9.2 million). A raw SQL reader of the embedded ledger sees picodollars.
    """

    impl = Numeric(24, MONEY_PLACES)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(BigInteger())
        return dialect.type_descriptor(Numeric(24, MONEY_PLACES))

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        amount = Decimal(str(value)) if not isinstance(value, Decimal) else value
        if dialect.name == "sqlite":
            return int(amount.scaleb(MONEY_PLACES).to_integral_value())
        return amount.quantize(_PICO)

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        if dialect.name == "sqlite":
            return Decimal(int(value)).scaleb(-MONEY_PLACES)
        return Decimal(value)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp that is written as UTC and read back as UTC.

    SQLite has no time zones and returns naive values; this makes both backends behave alike.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        stored: datetime = value
        if stored.tzinfo is None:
            return stored.replace(tzinfo=UTC)
        return stored.astimezone(UTC)


class Base(DeclarativeBase):
    """Declarative base of every ledger table."""


class UsageLogRow(Base):
    """``ai_usage_logs``: one row per attempt at a provider (ADR-006 schema plus routing fields)."""

    __tablename__ = "ai_usage_logs"
    __table_args__ = (
        UniqueConstraint(
            "journey_id", "attempt", "call_id", name="uq_ai_usage_logs_journey_attempt_call"
        ),
        Index("ix_ai_usage_logs_request_id", "request_id"),
        Index("ix_ai_usage_logs_created_at", "created_at"),
        Index("ix_ai_usage_logs_provider_created_at", "provider", "created_at"),
        Index("ix_ai_usage_logs_service_created_at", "service", "created_at"),
        Index("ix_ai_usage_logs_ledger_seq", "ledger_seq"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    request_id: Mapped[str] = mapped_column(String(64))
    # The pool's name for the request (task id and request digested): a reused task id is
    # another journey, so its rows never merge with the first request's.
    journey_id: Mapped[str] = mapped_column(String(64))
    attempt: Mapped[int] = mapped_column(Integer)
    # The call the row books (the owner name of the delivery that made it; "" for a hop that made
    # no call): a second call of one attempt (Redis restarted empty under the first) is its own
    # row, and one call recorded twice is one.
    call_id: Mapped[str] = mapped_column(String(32), default="", server_default="")
    provider: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(128))
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    success: Mapped[bool] = mapped_column(Boolean)
    error_message: Mapped[str | None] = mapped_column(Text)
    # A plain string: the users table lives in another service, so no foreign key.
    user_id: Mapped[str | None] = mapped_column(String(128))
    intent: Mapped[str | None] = mapped_column(String(64))
    complexity: Mapped[int | None] = mapped_column(Integer)
    # "why did this go to Claude?": the chain routing chose and its reasons, as shown to producers.
    route_chain: Mapped[str | None] = mapped_column(String(400))
    route_reason: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(32))
    fallback_position: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    # Tokens and cost are the reservation's estimate: the call reached the provider and ended
    # without a usage report (timeout, unreadable answer, worker gone), and is billed anyway.
    estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    # The service that sent the request, as the route table declares it, else "other".
    service: Mapped[str] = mapped_column(String(64), default="other")
    # An answer from the response cache (outcome "cached") costs $0: what it cost when a
    # provider gave it, which this hit saved.
    saved_usd: Mapped[Decimal] = mapped_column(Money, default=Decimal(0))
    # The request's trace when the pool traces (aipool.tracing): from a row to its trace.
    trace_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    # When the call started (aipool.ledger.spend: a call belongs to the day it started).
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # Arrival, not the call: the ledger clock's number of the write that stored the row (NULL
    # until numbered); every row numbered at or below the clock's ``rolled_through`` is in the
    # roll-ups, every other row is not (aipool.ledger.spend).
    ledger_seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # When the database stored the row (set by the database; a late row shows it here).
    inserted_at: Mapped[datetime | None] = mapped_column(
        UTCDateTime, nullable=True, server_default=func.current_timestamp()
    )


class LedgerClock(Base):
    """``ai_ledger_clock``: one row, the ledger's arrival counter and the roll-ups' watermark.

    Every write into ``ai_usage_logs`` and every roll-up first updates this row, so they take
    turns (a row lock on PostgreSQL, the write lock on SQLite): rows numbered up to
    ``rolled_through`` are exactly the rows the roll-up tables hold.
    """

    __tablename__ = "ai_ledger_clock"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: The last number handed out to a write or a roll-up.
    seq: Mapped[int] = mapped_column(BigInteger)
    #: Every ``ai_usage_logs`` row with ``ledger_seq <= rolled_through`` is in the roll-ups.
    rolled_through: Mapped[int] = mapped_column(BigInteger)
    rolled_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)


class _RollupColumns:
    """Columns shared by the daily and monthly roll-ups."""

    provider: Mapped[str] = mapped_column(String(32), primary_key=True)
    model: Mapped[str] = mapped_column(String(128), primary_key=True)
    requests: Mapped[int] = mapped_column(BigInteger)
    # Attempts that reached the provider (``CALLED_OUTCOMES``): what request quotas count.
    calls: Mapped[int] = mapped_column(BigInteger, default=0)
    successes: Mapped[int] = mapped_column(BigInteger)
    failures: Mapped[int] = mapped_column(BigInteger)
    fallbacks: Mapped[int] = mapped_column(BigInteger)
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    output_tokens: Mapped[int] = mapped_column(BigInteger)
    cost_usd: Mapped[Decimal] = mapped_column(Money)
    avg_latency_ms: Mapped[float | None] = mapped_column(Float)
    p95_latency_ms: Mapped[float | None] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime)


class DailyUsage(_RollupColumns, Base):
    """``ai_usage_daily``: totals per local calendar day, provider and model."""

    __tablename__ = "ai_usage_daily"

    day: Mapped[date] = mapped_column(Date, primary_key=True)


class MonthlyUsage(_RollupColumns, Base):
    """``ai_usage_monthly``: totals per local calendar month (first day of it), provider, model."""

    __tablename__ = "ai_usage_monthly"

    month: Mapped[date] = mapped_column(Date, primary_key=True)


#: What makes an alert journal's message news: one row per (service, rule, provider, threshold,
#: period, episode, state).
ALERT_KEY = ("service", "rule", "provider", "threshold", "period", "episode", "state")


class AlertEvent(Base):
    """``ai_alert_events``: the alert journal, one row per message (firing or resolved) of an
    episode of (service, rule, provider, threshold, period).

    A condition that holds again after its resolution in the same period opens the next episode.
    The unique constraint is what makes "once" hold when two beat runs race.
    """

    __tablename__ = "ai_alert_events"
    __table_args__ = (
        UniqueConstraint(
            *ALERT_KEY,
            name="uq_ai_alert_events_once",
        ),
        Index("ix_ai_alert_events_created_at", "created_at"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    rule: Mapped[str] = mapped_column(String(64))
    # "*" for rules that are not about one provider (the monthly budget).
    provider: Mapped[str] = mapped_column(String(32))
    # The service a budget alert is about (issue #24); "*" for alerts about no one service.
    service: Mapped[str] = mapped_column(String(64), default="*", server_default="*")
    severity: Mapped[str] = mapped_column(String(16))
    threshold: Mapped[str] = mapped_column(String(32))
    period: Mapped[str] = mapped_column(String(32))
    # 1 for the first firing of (rule, provider, threshold, period), 2 after its resolution...
    episode: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    channels: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)


#: The Core tables, for bulk statements (inserts, upserts) that bypass the ORM.
usage_logs = cast(Table, UsageLogRow.__table__)
usage_daily = cast(Table, DailyUsage.__table__)
usage_monthly = cast(Table, MonthlyUsage.__table__)
alert_events = cast(Table, AlertEvent.__table__)
ledger_clock = cast(Table, LedgerClock.__table__)
