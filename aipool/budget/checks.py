"""Evaluating the budget rules against the ledger and notifying, once per alert.

For every condition:

- it holds and has no open alert → journal "firing" (once, see ``events``) and notify;
- it does not hold but has an open alert → journal "resolved" (once) and notify;
- otherwise nothing: staying above a threshold sends nothing more.

The journal row is written *before* sending, so a crash mid-send never sends twice; the channels
and their outcome are added afterwards. If every channel failed, the log channel still has it.
When one run crosses several thresholds of the same provider (70% and 90% at once), only the
highest is sent; the lower ones are journaled as superseded, so they do not fire later either.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from functools import cache

from sqlalchemy import Engine

from aipool.budget import rules
from aipool.budget.alert_names import alert_name
from aipool.budget.events import open_period, record_once, set_channels
from aipool.budget.messages import describe
from aipool.budget.rules import Condition
from aipool.budget.sender import pool_sends_alerts
from aipool.budget.usage import budget_usage
from aipool.ledger.db import make_engine
from aipool.notify import Notification, Notifier, dispatch, notifiers_from_env
from aipool.periods import local_day, pool_zone
from aipool.settings import settings

log = logging.getLogger(__name__)


@cache
def default_engine() -> Engine:
    """One engine per process on ``DATABASE_URL`` (or the SQLite default), built on first use."""
    return make_engine()


def monthly_budget_usd() -> Decimal:
    """``AIPOOL_MONTHLY_BUDGET_USD``, default $10 (ADR-006)."""
    return settings().monthly_budget_usd


@dataclass(frozen=True)
class Sent:
    """An alert transition this run journaled, and what happened on each channel."""

    rule: str
    provider: str
    threshold: str
    state: str
    summary: str
    channels: dict[str, str]


def _notification(c: Condition, state: str, summary: str, description: str) -> Notification:
    return Notification(
        summary=summary,
        description=description,
        severity=c.severity,
        status=state,
        labels={
            # The name Prometheus gives the same alert (ADR-006's where it names one).
            "alertname": alert_name(c.rule, c.provider, c.threshold),
            "rule": c.rule,
            "provider": c.provider,
            "threshold": c.threshold,
            **({"period": c.period} if c.period else {}),
        },
    )


def apply_conditions(
    engine: Engine,
    conditions: Sequence[Condition],
    notifiers: Sequence[Notifier],
    now: datetime,
    *,
    zone: tzinfo,
    lang: str | None = None,
) -> list[Sent]:
    """Journal and send the transitions among ``conditions`` (see the module docstring)."""
    sent: list[Sent] = []
    superseded: set[tuple[str, str]] = set()
    for c in conditions:
        open_at = open_period(engine, c)
        if c.holds and open_at is None:
            state = "firing"
            period = c.period or now.astimezone(zone).strftime("%Y-%m-%dT%H:%M")
        elif not c.holds and open_at is not None:
            state, period = "resolved", open_at
        else:
            continue
        summary, description = describe(c, state, lang)
        if state == "firing" and (c.rule, c.provider) in superseded:
            record_once(engine, c, state, period, summary, now, {"superseded": "higher threshold"})
            continue
        event_id = record_once(engine, c, state, period, summary, now)
        if event_id is None:
            continue  # another run journaled it first and sends it
        if state == "firing":
            # Conditions come highest threshold first (see rules.quota_conditions).
            superseded.add((c.rule, c.provider))
        channels = dispatch(_notification(c, state, summary, description), notifiers)
        set_channels(engine, event_id, channels)
        sent.append(Sent(c.rule, c.provider, c.threshold, state, summary, channels))
    return sent


def run_budget_checks(
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    tz: tzinfo | str | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Evaluate the calendar quotas and the monthly cost now; send what is news.

    Nothing is evaluated or sent when Prometheus sends the alerts (``AIPOOL_ALERTS``).
    """
    if not pool_sends_alerts():
        return []
    engine = engine or default_engine()
    notifiers = notifiers_from_env() if notifiers is None else notifiers
    now = now or datetime.now(UTC)
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    usage = budget_usage(engine, now, zone)
    today = local_day(now, zone)
    month = today.strftime("%Y-%m")
    quotas = {p: limits.quota for p, limits in settings().limits.items()}
    conditions = [
        *rules.quota_conditions(usage, quotas, today.isoformat(), month),
        rules.monthly_cost_condition(usage.month_cost, monthly_budget_usd(), month),
    ]
    return apply_conditions(engine, conditions, notifiers, now, zone=zone, lang=lang)


def _breaker(
    provider: str,
    is_open: bool,
    engine: Engine | None,
    notifiers: Sequence[Notifier] | None,
    now: datetime | None,
    lang: str | None,
    facts: dict[str, object],
) -> list[Sent]:
    try:
        if not pool_sends_alerts():
            return []  # Prometheus alerts on the breaker state (AIPOOL_ALERTS=prometheus)
        return apply_conditions(
            engine or default_engine(),
            [rules.breaker_condition(provider, is_open, **facts)],
            notifiers_from_env() if notifiers is None else notifiers,
            now or datetime.now(UTC),
            zone=pool_zone(),
            lang=lang,
        )
    except Exception:
        # Called from the breaker's listener inside a worker: an alerting problem must never
        # fail the call that tripped the breaker.
        log.exception("breaker alert for %s not journaled", provider)
        return []


def notify_breaker_opened(
    provider: str,
    *,
    failures: int | None = None,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Alert (critical) that ``provider``'s breaker opened; once per opening, never raises.

    Further calls while the same opening is unresolved send nothing.
    """
    facts: dict[str, object] = {"failures": failures} if failures else {}
    return _breaker(provider, True, engine, notifiers, now, lang, facts)


def notify_breaker_closed(
    provider: str,
    *,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Report once that ``provider``'s open breaker closed again; never raises."""
    return _breaker(provider, False, engine, notifiers, now, lang, {})
