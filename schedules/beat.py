"""The beat schedule of the ledger, budget and quota maintenance tasks.

``celeryconfig`` imports ``beat_schedule`` (and sets ``timezone = "Asia/Taipei"``, so crontab
times below are Taipei times). Every task goes to the ``maintenance`` queue.
"""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

MAINTENANCE_QUEUE = "maintenance"

_ON_MAINTENANCE = {"queue": MAINTENANCE_QUEUE}
# A maintenance message older than its own period is useless: the next run supersedes it.
_FAST = {**_ON_MAINTENANCE, "expires": 5}
_MINUTE = {**_ON_MAINTENANCE, "expires": 60}
_FIVE_MINUTES = {**_ON_MAINTENANCE, "expires": 300}

beat_schedule: dict[str, dict[str, Any]] = {
    # Every few seconds: usage waits in Redis only briefly.
    "drain-ledger": {"task": "aipool.drain_ledger", "schedule": 5.0, "options": _FAST},
    "sweep-abandoned-attempts": {
        "task": "aipool.sweep_attempts",
        "schedule": crontab(minute="*"),
        "options": _MINUTE,
    },
    # A Redis restart without persistence: bring quota counters back from the ledger.
    "restore-quota-counters": {
        "task": "aipool.restore_quotas",
        "schedule": crontab(minute="*"),
        "options": _MINUTE,
    },
    # Every day that received rows since the last run, late ones included, and their months.
    "rollup-ledger": {
        "task": "aipool.rollup_ledger",
        "schedule": crontab(minute="*/5"),
        "options": _FIVE_MINUTES,
    },
    "budget-checks": {
        "task": "aipool.budget_checks",
        "schedule": crontab(minute="*/5"),
        "options": _FIVE_MINUTES,
    },
    "daily-budget-report": {
        "task": "aipool.daily_budget_report",
        "schedule": crontab(hour=9, minute=0),
        "options": _ON_MAINTENANCE,
    },
}

#: ``task_routes`` entries for celeryconfig: maintenance tasks never share a provider's queue.
task_routes: dict[str, dict[str, str]] = {
    **{entry["task"]: {"queue": MAINTENANCE_QUEUE} for entry in beat_schedule.values()},
    "aipool.breaker_transition": {"queue": MAINTENANCE_QUEUE},
    "aipool.model_missing": {"queue": MAINTENANCE_QUEUE},
    # Earlier releases' roll-up tasks (now aipool.rollup_ledger), sent by a beat not yet upgraded.
    **{
        name: {"queue": MAINTENANCE_QUEUE}
        for name in (
            "aipool.rollup_today",
            "aipool.rollup_yesterday",
            "aipool.rollup_current_month",
            "aipool.rollup_last_month",
        )
    },
}
