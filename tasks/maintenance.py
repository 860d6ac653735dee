"""Thin Celery tasks behind the beat schedule: each parses nothing, calls plain functions.

Registered with ``shared_task`` and explicit names, so importing this module needs no app. The
logic lives in ``aipool.ledger`` and ``aipool.budget`` and is tested there.

The routines beat runs send no task events (``send_events=False``), and beat publishes no
task-sent events (``workers.signals``): Flower's task list is for requests, and the ledger drain
alone (every 5 s) filled it with 17,280 entries a day. Their runs show in the maintenance
worker's log and in the metrics it exports (``aipool_ledger_pending_records``,
``aipool_state_up``). ``aipool.breaker_transition``, sent by a worker when a breaker changes
state, is rare and keeps its events.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

import redis
from celery import shared_task

from aipool.budget import build_report, report_notification, run_budget_checks
from aipool.budget.checks import default_engine
from aipool.ledger.rollup import rollup_day, rollup_month
from aipool.ledger.usage_log import drain
from aipool.notify import dispatch, notifiers_from_env
from aipool.periods import local_day, month_start, pool_zone, previous_month

log = logging.getLogger(__name__)

#: Options of the tasks beat schedules (see the module docstring).
ROUTINE: dict[str, Any] = {"ignore_result": True, "send_events": False}


def _redis() -> redis.Redis:
    from workers.runtime import shared_redis

    return shared_redis()


def _today() -> date:
    return local_day(datetime.now(UTC), pool_zone())


@shared_task(name="aipool.drain_ledger", **ROUTINE)
def drain_ledger(batch: int = 500) -> dict[str, Any]:
    """Move pending usage records from Redis into the ledger database."""
    return asdict(drain(_redis(), default_engine(), batch))


@shared_task(name="aipool.rollup_today", **ROUTINE)
def rollup_today() -> int:
    """Refresh today's daily roll-up (local calendar day)."""
    return rollup_day(default_engine(), _today(), pool_zone())


@shared_task(name="aipool.rollup_yesterday", **ROUTINE)
def rollup_yesterday() -> int:
    """Close yesterday's daily roll-up."""
    return rollup_day(default_engine(), _today() - timedelta(days=1), pool_zone())


@shared_task(name="aipool.rollup_current_month", **ROUTINE)
def rollup_current_month() -> int:
    """Refresh the monthly roll-up of the month containing yesterday (closed days only)."""
    return rollup_month(default_engine(), _today() - timedelta(days=1))


@shared_task(name="aipool.rollup_last_month", **ROUTINE)
def rollup_last_month() -> int:
    """Close last month: its last day's roll-up, then the month from the daily table."""
    engine = default_engine()
    last = previous_month(month_start(_today()))
    rollup_day(engine, month_start(_today()) - timedelta(days=1), pool_zone())
    return rollup_month(engine, last)


@shared_task(name="aipool.budget_checks", **ROUTINE)
def budget_checks() -> list[dict[str, Any]]:
    """Evaluate the budget rules and send what is news (nothing when ``AIPOOL_ALERTS=prometheus``:
    Prometheus alerts on the same figures, exported by this worker)."""
    return [asdict(s) for s in run_budget_checks(default_engine())]


@shared_task(name="aipool.daily_budget_report", **ROUTINE)
def daily_budget_report() -> dict[str, str]:
    """Send yesterday's full report (and this month so far) through every notifier."""
    engine = default_engine()
    day = _today() - timedelta(days=1)
    rollup_day(engine, day, pool_zone())
    report = build_report(engine, day, pool_zone())
    return dispatch(report_notification(report), notifiers_from_env())


@shared_task(name="aipool.sweep_attempts", **ROUTINE)
def sweep_attempts() -> int:
    """Abandon the calls whose lease ended with no outcome (their worker died or hung): each is
    charged its estimate and booked in the ledger (``aipool.attempt.lifecycle``)."""
    # Imported here: the worker's runtime builds the attempt book once per process.
    from workers.runtime import attempt_book

    return attempt_book().sweep()


@shared_task(name="aipool.restore_quotas", **ROUTINE)
def restore_quota_counters() -> dict[str, Any]:
    """Raise today's and this month's quota counters to what the ledger recorded.

    Redis keeps nothing on disk: after a restart every counter would read zero and a budget would
    start over. Restoring never lowers a counter, so running it on a schedule is safe.
    """
    from aipool.ledger.totals import restore_quotas
    from aipool.quota import quotas_for

    return restore_quotas(default_engine(), quotas_for(_redis()), datetime.now(UTC), pool_zone())


@shared_task(name="aipool.breaker_transition", ignore_result=True)
def breaker_transition(provider: str, old: str, new: str) -> None:
    """Alert on a breaker opening and report its recovery once (sent by the breaker listener);
    nothing when ``AIPOOL_ALERTS=prometheus``, where Prometheus alerts on the breaker state."""
    from aipool.budget import notify_breaker_closed, notify_breaker_opened

    if new == "open" and old != "open":
        notify_breaker_opened(provider)
    elif new == "closed" and old != "closed":
        notify_breaker_closed(provider)
