"""A usage row names the call it books: one row per call, not per attempt.

Redis restarted empty while a call ran lets a second delivery of the same attempt call again
(issue #42): two calls were paid, and keyed by (journey_id, attempt) the ledger kept one. Each
call is now named (``call_id``: the owner name of the delivery that made it, ``""`` for a hop
that made no call) and the ledger keeps one row per (journey_id, attempt, call_id): a call
recorded twice (a redelivered hop, a retried finish) is still one row, two calls are two. Rows
written before this revision book no named call.

Revision ID: 0009_call_identity
Revises: 0008_saved_trace (re-parent onto the newest revision when merging beside another 0009)
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_call_identity"
down_revision: str | None = "0008_saved_trace"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.add_column(sa.Column("call_id", sa.String(32), nullable=False, server_default=""))
        batch.drop_constraint("uq_ai_usage_logs_journey_attempt", type_="unique")
        batch.create_unique_constraint(
            "uq_ai_usage_logs_journey_attempt_call", ["journey_id", "attempt", "call_id"]
        )


def downgrade() -> None:
    # Two rows of one attempt become one again (the one with the smallest call id stays).
    op.execute(
        "DELETE FROM ai_usage_logs WHERE call_id <> '' AND EXISTS (SELECT 1 FROM ai_usage_logs o"
        " WHERE o.journey_id = ai_usage_logs.journey_id AND o.attempt = ai_usage_logs.attempt"
        " AND o.call_id < ai_usage_logs.call_id)"
    )
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.drop_constraint("uq_ai_usage_logs_journey_attempt_call", type_="unique")
        batch.create_unique_constraint(
            "uq_ai_usage_logs_journey_attempt", ["journey_id", "attempt"]
        )
        batch.drop_column("call_id")
