"""Every usage row says what a cache hit saved and which trace it belongs to.

``saved_usd``: an answer from the response cache (outcome ``cached``) is booked at $0, with what
it cost when a provider gave it (issue #45). ``trace_id``: the request's OpenTelemetry trace when
the pool traces, so an operator goes from a row to its trace. Rows written before this revision
saved nothing and belong to no trace.

Revision ID: 0008_saved_trace
Revises: 0006_alert_service (re-parent onto the newest revision when merging beside another 0007)
Create Date: 2026-12-10
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from aipool.ledger.models import Money

revision: str = "0008_saved_trace"
down_revision: str | None = "0006_alert_service"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.add_column(sa.Column("saved_usd", Money(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("trace_id", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.drop_column("trace_id")
        batch.drop_column("saved_usd")
