"""Every usage row names the service that sent the request.

Services share the pool (issue #24): each request names its service, as the route table declares
it, or is counted as ``other``. Rows written before this revision are ``other``. An index on
(service, created_at) serves the per-service reports and the restore of a month's spend.

Revision ID: 0005_service
Revises: 0004_spend_so_far
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_service"
down_revision: str | None = "0004_spend_so_far"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.add_column(
            sa.Column("service", sa.String(64), nullable=False, server_default="other")
        )
        batch.create_index("ix_ai_usage_logs_service_created_at", ["service", "created_at"])


def downgrade() -> None:
    with op.batch_alter_table("ai_usage_logs") as batch:
        batch.drop_index("ix_ai_usage_logs_service_created_at")
        batch.drop_column("service")
