"""The alert journal (``ai_alert_events``): deciding, race-free, whether an alert is news.

An alert is news when its row can be inserted: the unique key (rule, provider, threshold, period,
state) lets exactly one of two racing beat runs win; the loser inserts nothing and sends nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, select, update
from sqlalchemy.orm import aliased

from aipool.budget.rules import Condition
from aipool.ledger.models import AlertEvent, alert_events


def _insert_once(conn: Connection) -> Any:
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    return (
        insert(alert_events)
        .on_conflict_do_nothing(index_elements=["rule", "provider", "threshold", "period", "state"])
        .returning(alert_events.c.id)
    )


def record_once(
    engine: Engine,
    condition: Condition,
    state: str,
    period: str,
    message: str,
    now: datetime,
    channels: dict[str, str] | None = None,
) -> int | None:
    """Journal ``condition`` entering ``state`` for ``period``; the new row's id, or ``None``
    when that transition was already journaled (by this or a concurrent run)."""
    row = {
        "rule": condition.rule,
        "provider": condition.provider,
        "severity": condition.severity,
        "threshold": condition.threshold,
        "period": period,
        "state": state,
        "message": message,
        "channels": channels or {},
        "created_at": now,
    }
    with engine.begin() as conn:
        return conn.execute(_insert_once(conn), row).scalar_one_or_none()


def open_period(engine: Engine, condition: Condition) -> str | None:
    """The period of the condition's firing row that has no resolved row yet, if any.

    Calendar rules look only at the condition's own period; episode rules at any period.
    """
    fired = aliased(AlertEvent)
    resolved = aliased(AlertEvent)
    query = (
        select(fired.period)
        .outerjoin(
            resolved,
            and_(
                resolved.rule == fired.rule,
                resolved.provider == fired.provider,
                resolved.threshold == fired.threshold,
                resolved.period == fired.period,
                resolved.state == "resolved",
            ),
        )
        .where(
            fired.rule == condition.rule,
            fired.provider == condition.provider,
            fired.threshold == condition.threshold,
            fired.state == "firing",
            resolved.id.is_(None),
        )
        .order_by(fired.created_at.desc())
        .limit(1)
    )
    if condition.period is not None:
        query = query.where(fired.period == condition.period)
    with engine.connect() as conn:
        return conn.execute(query).scalar_one_or_none()


def set_channels(engine: Engine, event_id: int, channels: dict[str, str]) -> None:
    """Store where the event's notification went and how that went."""
    with engine.begin() as conn:
        conn.execute(update(AlertEvent).where(AlertEvent.id == event_id).values(channels=channels))
