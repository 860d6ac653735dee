"""Keep the routing decision on every usage row: the chain and why it was chosen.

Revision ID: 0002_route_decision
Revises: 0001_initial
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_route_decision"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("ai_usage_logs", sa.Column("route_chain", sa.String(400), nullable=True))
    op.add_column("ai_usage_logs", sa.Column("route_reason", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("ai_usage_logs", "route_reason")
    op.drop_column("ai_usage_logs", "route_chain")
