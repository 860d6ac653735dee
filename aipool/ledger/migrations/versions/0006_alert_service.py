"""Every alert of the journal names the service it is about.

A service's budget alert (issue #24) is sent to its owner, once per threshold per service per
month: the journal's unique key gains ``service``. Alerts that are about no one service (the pool's
quotas, its monthly budget, breakers), and every row written before this revision, are ``*``.

Revision ID: 0006_alert_service
Revises: 0005_service
Create Date: 2026-12-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_alert_service"
down_revision: str | None = "0005_service"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KEY = ["rule", "provider", "threshold", "period", "episode", "state"]


def upgrade() -> None:
    with op.batch_alter_table("ai_alert_events") as batch:
        batch.add_column(sa.Column("service", sa.String(64), nullable=False, server_default="*"))
        batch.drop_constraint("uq_ai_alert_events_once", type_="unique")
        batch.create_unique_constraint("uq_ai_alert_events_once", ["service", *_KEY])


def downgrade() -> None:
    # Only the alerts about no one service fit the old key.
    op.execute("DELETE FROM ai_alert_events WHERE service <> '*'")
    with op.batch_alter_table("ai_alert_events") as batch:
        batch.drop_constraint("uq_ai_alert_events_once", type_="unique")
        batch.create_unique_constraint("uq_ai_alert_events_once", _KEY)
        batch.drop_column("service")
