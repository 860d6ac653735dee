"""The alert journal (``ai_alert_events``): episodes of each alert, decided race-free.

An alert is (service, rule, provider, threshold, period); ``service`` is ``*`` for alerts about
no one service (all but a service's budget). Its journal is a sequence of episodes, each a
"firing" row and, once it ended, a "resolved" row with the same episode number:

==========================  ========================================  ===========================
alert's journal             condition holds                           condition does not hold
==========================  ========================================  ===========================
no episode, or last ended   journal "firing" of episode n+1, send     nothing
episode n open              nothing (staying above sends no more)     journal "resolved" of n, send
episode n open, period      journal "resolved" of n, send (the period ended: checks.expire_periods)
ended (calendar rules)
==========================  ========================================  ===========================

So a condition that holds again after a resolution in the same period is sent again, and the
messages of an alert alternate firing, resolved, firing... A transition is news when its row can be
inserted: the unique key (service, rule, provider, threshold, period, episode, state) lets exactly one of
two racing beat runs win; the loser inserts nothing and sends nothing. A transition journaled as
``superseded`` (a lower threshold crossed in the same run as a higher one) is never sent, and
neither is the end of its episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, func, select, update
from sqlalchemy.orm import aliased

from aipool.budget.rules import Condition
from aipool.ledger.models import ALERT_KEY, AlertEvent, alert_events

#: ``channels`` of a transition journaled but deliberately not sent.
SUPERSEDED = {"superseded": "higher threshold"}


@dataclass(frozen=True)
class OpenEpisode:
    """An alert episode that fired and has not been resolved yet."""

    rule: str
    provider: str
    threshold: str
    severity: str
    period: str
    episode: int
    fired_at: datetime
    summary: str
    #: Journaled without being sent (superseded): its end is not sent either.
    silent: bool
    service: str = "*"

    def condition(self) -> Condition:
        """The alert as a condition that no longer holds (for journaling its end)."""
        return Condition(
            self.rule,
            self.provider,
            self.threshold,
            self.severity,
            False,
            self.period,
            service=self.service,
        )


def _insert_once(conn: Connection) -> Any:
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    return (
        insert(alert_events)
        .on_conflict_do_nothing(index_elements=list(ALERT_KEY))
        .returning(alert_events.c.id)
    )


def record_once(
    engine: Engine,
    condition: Condition,
    state: str,
    period: str,
    episode: int,
    message: str,
    now: datetime,
    channels: dict[str, str] | None = None,
) -> int | None:
    """Journal episode ``episode`` of ``condition`` entering ``state`` for ``period``; the new
    row's id, or ``None`` when that transition was already journaled (by this or a concurrent
    run)."""
    row = {
        "service": condition.service,
        "rule": condition.rule,
        "provider": condition.provider,
        "severity": condition.severity,
        "threshold": condition.threshold,
        "period": period,
        "episode": episode,
        "state": state,
        "message": message,
        "channels": channels or {},
        "created_at": now,
    }
    with engine.begin() as conn:
        return conn.execute(_insert_once(conn), row).scalar_one_or_none()


def _open_query() -> Any:
    fired = aliased(AlertEvent)
    resolved = aliased(AlertEvent)
    return fired, (
        select(
            fired.rule,
            fired.provider,
            fired.threshold,
            fired.severity,
            fired.period,
            fired.episode,
            fired.created_at,
            fired.message,
            fired.channels,
            fired.service,
        )
        .outerjoin(
            resolved,
            and_(
                resolved.service == fired.service,
                resolved.rule == fired.rule,
                resolved.provider == fired.provider,
                resolved.threshold == fired.threshold,
                resolved.period == fired.period,
                resolved.episode == fired.episode,
                resolved.state == "resolved",
            ),
        )
        .where(fired.state == "firing", resolved.id.is_(None))
    )


def _episode(row: Any) -> OpenEpisode:
    return OpenEpisode(
        rule=row.rule,
        provider=row.provider,
        threshold=row.threshold,
        severity=row.severity,
        period=row.period,
        episode=int(row.episode),
        fired_at=row.created_at,
        summary=row.message,
        silent=bool(row.channels and "superseded" in row.channels),
        service=row.service,
    )


def open_episode(engine: Engine, condition: Condition) -> OpenEpisode | None:
    """The condition's episode that fired and has not been resolved, if any.

    Calendar rules look only at the condition's own period; episode rules at any period.
    """
    fired, query = _open_query()
    query = query.where(
        fired.service == condition.service,
        fired.rule == condition.rule,
        fired.provider == condition.provider,
        fired.threshold == condition.threshold,
    )
    if condition.period is not None:
        query = query.where(fired.period == condition.period)
    query = query.order_by(fired.created_at.desc(), fired.id.desc()).limit(1)
    with engine.connect() as conn:
        row = conn.execute(query).one_or_none()
        return None if row is None else _episode(row)


def open_episodes(engine: Engine, rules: tuple[str, ...]) -> list[OpenEpisode]:
    """Every open episode of ``rules``, oldest first."""
    fired, query = _open_query()
    query = query.where(fired.rule.in_(rules)).order_by(fired.created_at, fired.id)
    with engine.connect() as conn:
        return [_episode(row) for row in conn.execute(query)]


def next_episode(engine: Engine, condition: Condition, period: str) -> int | None:
    """The number the next firing of ``condition`` in ``period`` takes (1 for the first), or
    ``None`` while the latest episode is still open.

    One statement reads the latest episode and its states, so two racing runs either both see
    the episode the other opened, or both pick the same number and the journal's key lets only
    one of them fire.
    """
    e = alert_events.c
    same = and_(
        e.service == condition.service,
        e.rule == condition.rule,
        e.provider == condition.provider,
        e.threshold == condition.threshold,
        e.period == period,
    )
    latest = select(func.max(e.episode)).where(same).scalar_subquery()
    with engine.connect() as conn:
        rows = conn.execute(select(e.episode, e.state).where(same, e.episode == latest)).all()
    if not rows:
        return 1
    episode = int(rows[0][0])
    return episode + 1 if any(state == "resolved" for _, state in rows) else None


def set_channels(engine: Engine, event_id: int, channels: dict[str, str]) -> None:
    """Store where the event's notification went and how that went."""
    with engine.begin() as conn:
        conn.execute(update(AlertEvent).where(AlertEvent.id == event_id).values(channels=channels))
