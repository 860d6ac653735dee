"""Spend so far: exact money, the ledger clock, and alert episodes.

- Money columns keep picodollars (10^-12 USD) instead of microdollars: ``NUMERIC(24, 12)`` on
  PostgreSQL; on SQLite, which has no decimal type and stored floats, whole picodollars
  (``BIGINT``), converted from the stored values (``aipool.ledger.models.Money``).
- ``ai_usage_logs`` gains ``ledger_seq`` (the arrival number of the write that stored the row) and
  ``inserted_at`` (when the database stored it; set by the database from now on, unknown for older
  rows).
- ``ai_ledger_clock`` (one row) holds the arrival counter and the roll-ups' watermark.
- The roll-up tables gain ``calls`` and are emptied: they are derived data, and the old ones
  missed late rows. Every existing row is numbered 1 and the watermark is 0, so every figure reads
  the raw rows until the first roll-up (beat's next run) rebuilds every day and month from them.
- ``ai_alert_events`` gains ``episode``: a condition that holds again after its resolution in the
  same period opens episode 2, and the journal's unique key includes it.

Revision ID: 0004_spend_so_far
Revises: 0003_attempt_identity
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0004_spend_so_far"
down_revision: str | None = "0003_attempt_identity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_MONEY = sa.Numeric(14, 6)
_NEW_MONEY = sa.Numeric(24, 12)
_ROLLUPS = ("ai_usage_daily", "ai_usage_monthly")
_PICO = 10**12


def _sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def _money_to(table: str, new: sa.types.TypeEngine[Any], old: sa.types.TypeEngine[Any]) -> None:
    with op.batch_alter_table(table) as batch:
        batch.alter_column("cost_usd", type_=new, existing_type=old, existing_nullable=False)


def upgrade() -> None:
    sqlite = _sqlite()
    # Numbered 1, never rolled up (watermark 0): read raw until the first roll-up rebuilds.
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.add_column(sa.Column("ledger_seq", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("inserted_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE ai_usage_logs SET ledger_seq = 1")
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.alter_column(
            "inserted_at",
            existing_type=sa.DateTime(timezone=True),
            existing_nullable=True,
            server_default=sa.func.current_timestamp(),
        )
        batch.create_index("ix_ai_usage_logs_ledger_seq", ["ledger_seq"])
    clock = op.create_table(
        "ai_ledger_clock",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("rolled_through", sa.BigInteger, nullable=False),
        sa.Column("rolled_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.bulk_insert(clock, [{"id": 1, "seq": 1, "rolled_through": 0, "rolled_at": None}])

    for table in _ROLLUPS:
        op.execute(f"DELETE FROM {table}")
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("calls", sa.BigInteger, nullable=False, server_default="0"))
    if sqlite:
        # Floats of at most six decimals become exact whole picodollars.
        op.execute(
            f"UPDATE ai_usage_logs SET cost_usd = CAST(ROUND(cost_usd * {_PICO}) AS INTEGER)"
        )
        for table in ("ai_usage_logs", *_ROLLUPS):
            _money_to(table, sa.BigInteger(), _OLD_MONEY)
    else:
        for table in ("ai_usage_logs", *_ROLLUPS):
            _money_to(table, _NEW_MONEY, _OLD_MONEY)

    with op.batch_alter_table("ai_alert_events") as batch:
        batch.add_column(sa.Column("episode", sa.Integer, nullable=False, server_default="1"))
        batch.drop_constraint("uq_ai_alert_events_once", type_="unique")
        batch.create_unique_constraint(
            "uq_ai_alert_events_once",
            ["rule", "provider", "threshold", "period", "episode", "state"],
        )


def downgrade() -> None:
    sqlite = _sqlite()
    # Only the first episode of each alert fits the old key.
    op.execute("DELETE FROM ai_alert_events WHERE episode > 1")
    with op.batch_alter_table("ai_alert_events") as batch:
        batch.drop_constraint("uq_ai_alert_events_once", type_="unique")
        batch.create_unique_constraint(
            "uq_ai_alert_events_once", ["rule", "provider", "threshold", "period", "state"]
        )
        batch.drop_column("episode")
    if sqlite:
        for table in ("ai_usage_logs", *_ROLLUPS):
            _money_to(table, _OLD_MONEY, sa.BigInteger())
        for table in ("ai_usage_logs", *_ROLLUPS):
            op.execute(f"UPDATE {table} SET cost_usd = ROUND(cost_usd / {_PICO}.0, 6)")
    else:
        for table in ("ai_usage_logs", *_ROLLUPS):
            _money_to(table, _OLD_MONEY, _NEW_MONEY)
    for table in _ROLLUPS:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("calls")
    op.drop_table("ai_ledger_clock")
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.drop_index("ix_ai_usage_logs_ledger_seq")
        batch.drop_column("inserted_at")
        batch.drop_column("ledger_seq")
