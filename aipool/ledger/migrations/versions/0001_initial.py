"""Initial ledger schema: usage logs, daily and monthly roll-ups, alert events.

Revision ID: 0001_initial
Revises:
Create Date: 2026-05-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from aipool.ledger.models import UTCDateTime

# The money type this revision created (0003 widens it); frozen here, not read from the models.
Money = sa.Numeric(14, 6)

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rollup_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("requests", sa.BigInteger, nullable=False),
        sa.Column("successes", sa.BigInteger, nullable=False),
        sa.Column("failures", sa.BigInteger, nullable=False),
        sa.Column("fallbacks", sa.BigInteger, nullable=False),
        sa.Column("input_tokens", sa.BigInteger, nullable=False),
        sa.Column("output_tokens", sa.BigInteger, nullable=False),
        sa.Column("cost_usd", Money, nullable=False),
        sa.Column("avg_latency_ms", sa.Float, nullable=True),
        sa.Column("p95_latency_ms", sa.Float, nullable=True),
        sa.Column("updated_at", UTCDateTime, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "ai_usage_logs",
        sa.Column("id", sa.Uuid, primary_key=True),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("input_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("output_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("latency_ms", sa.Integer, nullable=True),
        sa.Column("success", sa.Boolean, nullable=False),
        sa.Column("error_message", sa.Text, nullable=True),
        sa.Column("user_id", sa.String(128), nullable=True),
        sa.Column("intent", sa.String(64), nullable=True),
        sa.Column("complexity", sa.Integer, nullable=True),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("fallback_position", sa.Integer, nullable=False, server_default="0"),
        sa.Column("cost_usd", Money, nullable=False, server_default="0"),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint("request_id", "attempt", name="uq_ai_usage_logs_request_attempt"),
    )
    # Roll-ups and alerts scan one period at a time: a range on created_at, optionally per provider.
    op.create_index("ix_ai_usage_logs_created_at", "ai_usage_logs", ["created_at"])
    op.create_index(
        "ix_ai_usage_logs_provider_created_at", "ai_usage_logs", ["provider", "created_at"]
    )
    op.create_table(
        "ai_usage_daily",
        sa.Column("day", sa.Date, nullable=False),
        *_rollup_columns(),
        sa.PrimaryKeyConstraint("day", "provider", "model", name="pk_ai_usage_daily"),
    )
    op.create_table(
        "ai_usage_monthly",
        sa.Column("month", sa.Date, nullable=False),
        *_rollup_columns(),
        sa.PrimaryKeyConstraint("month", "provider", "model", name="pk_ai_usage_monthly"),
    )
    op.create_table(
        "ai_alert_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("rule", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("threshold", sa.String(32), nullable=False),
        sa.Column("period", sa.String(32), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("channels", sa.JSON, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.UniqueConstraint(
            "rule", "provider", "threshold", "period", "state", name="uq_ai_alert_events_once"
        ),
    )
    op.create_index("ix_ai_alert_events_created_at", "ai_alert_events", ["created_at"])


def downgrade() -> None:
    op.drop_table("ai_alert_events")
    op.drop_table("ai_usage_monthly")
    op.drop_table("ai_usage_daily")
    op.drop_table("ai_usage_logs")
