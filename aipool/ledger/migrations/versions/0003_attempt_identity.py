"""An attempt is named by the pool's journey id, not the producer's task id; estimated bills.

A producer may reuse a task id for another request: keyed by (request_id, attempt), the second
request's rows would be swallowed by the first's. The pool names each request's journey itself
(``journey_id``, a digest of the task id and the request) and the ledger keeps one row per
(journey_id, attempt); ``request_id`` stays the id the producer holds, indexed for look-ups.
Rows written before this revision keep their request id as their journey id.

``estimated``: the row's tokens are the reservation's estimate, not a usage report (a call that
reached the provider and ended without one: a timeout, an unreadable answer, a worker that died).

Revision ID: 0003_attempt_identity
Revises: 0002_route_decision
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_attempt_identity"
down_revision: str | None = "0002_route_decision"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.add_column(sa.Column("journey_id", sa.String(64), nullable=True))
        batch.add_column(
            sa.Column("estimated", sa.Boolean, nullable=False, server_default=sa.false())
        )
    op.execute("UPDATE ai_usage_logs SET journey_id = request_id WHERE journey_id IS NULL")
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.alter_column("journey_id", existing_type=sa.String(64), nullable=False)
        batch.drop_constraint("uq_ai_usage_logs_request_attempt", type_="unique")
        batch.create_unique_constraint(
            "uq_ai_usage_logs_journey_attempt", ["journey_id", "attempt"]
        )
        batch.create_index("ix_ai_usage_logs_request_id", ["request_id"])


def downgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.drop_index("ix_ai_usage_logs_request_id")
        batch.drop_constraint("uq_ai_usage_logs_journey_attempt", type_="unique")
        batch.create_unique_constraint(
            "uq_ai_usage_logs_request_attempt", ["request_id", "attempt"]
        )
        batch.drop_column("estimated")
        batch.drop_column("journey_id")
