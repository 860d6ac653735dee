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
    # Redis keeps nothing on disk: bring quota counters back from the ledger after a restart.
    "restore-quota-counters": {
        "task": "aipool.restore_quotas",
        "schedule": crontab(minute="*"),
        "options": _MINUTE,
    },
    "rollup-today": {
        "task": "aipool.rollup_today",
        "schedule": crontab(minute="*/5"),
        "options": _FIVE_MINUTES,
    },
    "budget-checks": {
        "task": "aipool.budget_checks",
        "schedule": crontab(minute="*/5"),
        "options": _FIVE_MINUTES,
    },
    # Closing runs: yesterday once its last records are drained, then the month so far.
    "rollup-yesterday": {
        "task": "aipool.rollup_yesterday",
        "schedule": crontab(hour=0, minute=5),
        "options": _ON_MAINTENANCE,
    },
    "rollup-current-month": {
        "task": "aipool.rollup_current_month",
        "schedule": crontab(hour=0, minute=10),
        "options": _ON_MAINTENANCE,
    },
    "rollup-last-month": {
        "task": "aipool.rollup_last_month",
        "schedule": crontab(hour=0, minute=15, day_of_month=1),
        "options": _ON_MAINTENANCE,
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
}
