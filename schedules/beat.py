"""The beat schedule of the ledger, budget and quota maintenance tasks.

``celeryconfig`` imports ``beat_schedule`` (and sets ``timezone = "Asia/Taipei"``, so crontab
times below are Taipei times). Every task goes to the ``maintenance`` queue.
"""

from __future__ import annotations

from typing import Any

from celery.schedules import crontab

MAINTENANCE_QUEUE = "maintenance"

_ON_MAINTENANCE = {"queue": MAINTENANCE_QUEUE}
# No Celery ``expires``: it is an instant on beat's clock that the worker compares with its own,
# and a skew larger than the period discarded every run (issue #42). Each run is stamped with
# Redis's time instead and skipped on Redis's clock (aipool.routines, ROUTINE_STALE_AFTER_S).
beat_schedule: dict[str, dict[str, Any]] = {
    # Every few seconds: usage waits in Redis only briefly.
    "drain-ledger": {"task": "aipool.drain_ledger", "schedule": 5.0, "options": _ON_MAINTENANCE},
    "sweep-abandoned-attempts": {
        "task": "aipool.sweep_attempts",
        "schedule": crontab(minute="*"),
        "options": _ON_MAINTENANCE,
    },
    # A Redis restart without persistence: bring quota counters back from the ledger.
    "restore-quota-counters": {
        "task": "aipool.restore_quotas",
        "schedule": crontab(minute="*"),
        "options": _ON_MAINTENANCE,
    },
    # Every day that received rows since the last run, late ones included, and their months.
    "rollup-ledger": {
        "task": "aipool.rollup_ledger",
        "schedule": crontab(minute="*/5"),
        "options": _ON_MAINTENANCE,
    },
    "budget-checks": {
        "task": "aipool.budget_checks",
        "schedule": crontab(minute="*/5"),
        "options": _ON_MAINTENANCE,
    },
    "daily-budget-report": {
        "task": "aipool.daily_budget_report",
        "schedule": crontab(hour=9, minute=0),
        "options": _ON_MAINTENANCE,
    },
}

#: Seconds on Redis's clock after which a run beat sent is skipped, per routine: three of its
#: periods (a backlog left while the maintenance worker was away; the next tick's run does the
#: work). None: a late run is still worth running (the daily report).
ROUTINE_STALE_AFTER_S: dict[str, float | None] = {
    "aipool.drain_ledger": 15.0,
    "aipool.sweep_attempts": 180.0,
    "aipool.restore_quotas": 180.0,
    "aipool.rollup_ledger": 900.0,
    "aipool.budget_checks": 900.0,
    "aipool.daily_budget_report": None,
}

#: ``task_routes`` entries for celeryconfig: maintenance tasks never share a provider's queue.
task_routes: dict[str, dict[str, str]] = {
    **{entry["task"]: {"queue": MAINTENANCE_QUEUE} for entry in beat_schedule.values()},
    "aipool.breaker_transition": {"queue": MAINTENANCE_QUEUE},
    "aipool.model_missing": {"queue": MAINTENANCE_QUEUE},
    "aipool.provider_not_found": {"queue": MAINTENANCE_QUEUE},
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
