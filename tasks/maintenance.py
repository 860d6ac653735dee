"""Thin Celery tasks behind the beat schedule: each parses nothing, calls plain functions.

Registered with ``shared_task`` and explicit names, so importing this module needs no app. The
logic lives in ``aipool.ledger`` and ``aipool.budget`` and is tested there.

The routines beat runs send no task events (``send_events=False``), and beat publishes no
task-sent events (``workers.signals``): Flower's task list is for requests, and the ledger drain
alone (every 5 s) filled it with 17,280 entries a day. Their runs show in the maintenance
worker's log and in the metrics it exports (``aipool_ledger_pending_records``,
``aipool_state_up``). ``aipool.breaker_transition``, sent by a worker when a breaker changes
state, ``aipool.model_missing``, sent by a worker whose provider has not got the route's
model, and ``aipool.provider_not_found``, sent by a worker whose provider's URL does not serve its
API, are rare and keep their events.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, date, datetime, timedelta
from typing import Any, ParamSpec, TypeVar

import redis
from celery import current_task, shared_task

from aipool.budget import (
    build_report,
    notify_breaker_closed,
    notify_breaker_opened,
    notify_model_missing,
    notify_provider_not_found,
    reconcile_breaker_alerts,
    report_notification,
    run_budget_checks,
)
from aipool.budget.checks import default_engine
from aipool.ledger.rollup import rollup
from aipool.ledger.spend import service_month_cost
from aipool.ledger.totals import restore_quotas
from aipool.ledger.usage_log import drain
from aipool.notify import dispatch, notifiers_from_env
from aipool.periods import local_day, month_of, pool_zone
from aipool.quota import quotas_for
from aipool.routines import HEADER, may_run
from workers.runtime import TRIPPED_AT_HEADER, attempt_book, header_number, shared_redis

log = logging.getLogger(__name__)

#: Options of the tasks beat schedules (see the module docstring).
ROUTINE: dict[str, Any] = {"ignore_result": True, "send_events": False}


P = ParamSpec("P")
R = TypeVar("R")


def on_the_pools_clock(name: str) -> Callable[[Callable[P, R]], Callable[P, R | None]]:
    """Run routine ``name`` only if Redis says so (:func:`aipool.routines.may_run`): a run beat
    sent is skipped when a later one already began or it is stale on Redis's clock, never
    because of a host's clock. A skipped run returns None and says why in the log."""

    def wrap(routine: Callable[P, R]) -> Callable[P, R | None]:
        @functools.wraps(routine)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
            request = getattr(current_task, "request", None)
            stamped = getattr(request, HEADER, None) if request is not None else None
            try:
                go, why = may_run(_redis(), name, stamped)
            except redis.RedisError as exc:
                # Routines that need only the ledger (roll-ups, budget checks) still run.
                log.warning("routine %s runs unguarded: %s", name, type(exc).__name__)
                go, why = True, ""
            if not go:
                log.info("routine %s skipped: %s", name, why)
                return None
            return routine(*args, **kwargs)

        return guarded

    return wrap


def _redis() -> redis.Redis[Any]:

    return shared_redis()


def _today() -> date:
    return local_day(datetime.now(UTC), pool_zone())


@shared_task(name="aipool.drain_ledger", **ROUTINE)
@on_the_pools_clock("aipool.drain_ledger")
def drain_ledger(batch: int = 500) -> dict[str, Any]:
    """Move pending usage records from Redis into the ledger database."""
    return asdict(drain(_redis(), default_engine(), batch))


@shared_task(name="aipool.rollup_ledger", **ROUTINE)
@on_the_pools_clock("aipool.rollup_ledger")
def rollup_ledger() -> dict[str, Any]:
    """Bring the daily and monthly roll-ups up to every row stored so far: every day that received
    rows since the last run (late rows of closed days included) and their months."""
    result = rollup(default_engine(), pool_zone())
    return {
        "days": [day.isoformat() for day in result.days],
        "months": [month.isoformat() for month in result.months],
        "rolled_through": result.rolled_through,
    }


# The four roll-ups of earlier schedules, kept so a message from a beat of an earlier release is
# still served during an upgrade: each is now the one roll-up above.
@shared_task(name="aipool.rollup_today", **ROUTINE)
def rollup_today() -> dict[str, Any]:
    """Earlier name of :func:`rollup_ledger`."""
    summary: dict[str, Any] = rollup_ledger()
    return summary


@shared_task(name="aipool.rollup_yesterday", **ROUTINE)
def rollup_yesterday() -> dict[str, Any]:
    """Earlier name of :func:`rollup_ledger`."""
    summary: dict[str, Any] = rollup_ledger()
    return summary


@shared_task(name="aipool.rollup_current_month", **ROUTINE)
def rollup_current_month() -> dict[str, Any]:
    """Earlier name of :func:`rollup_ledger`."""
    summary: dict[str, Any] = rollup_ledger()
    return summary


@shared_task(name="aipool.rollup_last_month", **ROUTINE)
def rollup_last_month() -> dict[str, Any]:
    """Earlier name of :func:`rollup_ledger`."""
    summary: dict[str, Any] = rollup_ledger()
    return summary


@shared_task(name="aipool.budget_checks", **ROUTINE)
@on_the_pools_clock("aipool.budget_checks")
def budget_checks() -> list[dict[str, Any]]:
    """Evaluate the budget rules and send what is news (nothing when ``AIPOOL_ALERTS=prometheus``:
    Prometheus alerts on the same figures, exported by this worker); then resolve the breaker
    alerts whose outage the breakers no longer hold (Redis lost their state, a closing's message
    was lost)."""
    engine = default_engine()
    sent = run_budget_checks(engine) + reconcile_breaker_alerts(_redis(), engine=engine)
    return [asdict(s) for s in sent]


@shared_task(name="aipool.daily_budget_report", **ROUTINE)
@on_the_pools_clock("aipool.daily_budget_report")
def daily_budget_report() -> dict[str, str]:
    """Send yesterday's full report (and this month so far) through every notifier."""
    engine = default_engine()
    day = _today() - timedelta(days=1)
    report = build_report(engine, day, pool_zone())
    return dispatch(report_notification(report), notifiers_from_env())


@shared_task(name="aipool.sweep_attempts", **ROUTINE)
@on_the_pools_clock("aipool.sweep_attempts")
def sweep_attempts() -> int:
    """Abandon the calls whose lease ended with no outcome (their worker died or hung): each is
    charged its estimate and booked in the ledger (``aipool.attempt.lifecycle``)."""

    return attempt_book().sweep()


@shared_task(name="aipool.restore_quotas", **ROUTINE)
@on_the_pools_clock("aipool.restore_quotas")
def restore_quota_counters() -> dict[str, Any]:
    """Raise today's and this month's quota counters to what the ledger recorded.

    A Redis that keeps nothing on disk reads zero after a restart, and a budget would start over.
    The figures are the budget checks' own (:mod:`aipool.ledger.spend`): a call counts in the day
    it started, as its reservation did. Restoring never lowers a counter, so running it on a
    schedule is safe.
    """
    # deferred: loads aipool.attempt.layout, aipool.attempt.money (~46 ms of start-up) only when this runs
    from aipool.attempt.layout import spend_key
    from aipool.attempt.money import restore_spend

    engine, now, zone = default_engine(), datetime.now(UTC), pool_zone()
    restored: dict[str, Any] = dict(restore_quotas(engine, quotas_for(_redis()), now, zone))
    # The month's spend per service, when Redis lost it: the cap and the services' budgets.
    month = month_of(now.timestamp(), zone).label
    if not _redis().exists(spend_key(month)):
        by_service = service_month_cost(engine, local_day(now, zone), zone)
        restored["spend"] = restore_spend(_redis(), month, by_service)
    return restored


@shared_task(name="aipool.breaker_transition", bind=True, ignore_result=True)
def breaker_transition(self: Any, provider: str, old: str, new: str) -> None:
    """Alert on a breaker opening and report its recovery once (sent by the breaker listener);
    nothing when ``AIPOOL_ALERTS=prometheus``, where Prometheus alerts on the breaker state.

    The outage is named by the message's ``aipool_tripped_at`` header
    (``workers.runtime.alert_on_transition``): one alert per outage, resolved by that outage's end
    only. Messages of earlier releases carry none, and are served as they were."""

    tripped_at = header_number(self.request, TRIPPED_AT_HEADER)
    if new == "open" and old != "open":
        notify_breaker_opened(provider, tripped_at=tripped_at)
    elif new == "closed" and old != "closed":
        notify_breaker_closed(provider, tripped_at=tripped_at)


@shared_task(name="aipool.model_missing", ignore_result=True)
def model_missing(provider: str, model: str) -> None:
    """Alert that ``provider`` has not got ``model`` (sent by the worker whose call met the 404);
    once per provider and day, whoever sends the budget alerts."""

    notify_model_missing(provider, model)


@shared_task(name="aipool.provider_not_found", ignore_result=True)
def provider_not_found(provider: str, host: str) -> None:
    """Alert that ``provider``'s base URL, on ``host``, does not serve its API (sent by the worker
    whose call met the 404 or 405); once per provider and day, whoever sends the budget alerts."""

    notify_provider_not_found(provider, host)
