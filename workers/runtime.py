"""The per-process pieces a worker (or an importing producer) builds once."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import cache
from typing import Any

import redis
from celery import Celery

from aipool.attempt.event import AttemptEvent
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.runner import HopRunner
from aipool.backlog import oldest_ages
from aipool.breaker import breakers_for
from aipool.breaker.listeners import log_transition
from aipool.breaker.state import BreakerTransition
from aipool.cache.front import CacheFront
from aipool.cache.store import ResponseStore
from aipool.ledger.db import make_engine
from aipool.ledger.outbox import OUTBOX
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import UsageLog, store_now
from aipool.metrics.hops import observe_attempt, observe_transition
from aipool.observers import LedgerObserver
from aipool.prices.table import completion_cost, cost_usd
from aipool.providers.endpoint import base_url_host
from aipool.quota import quotas_for
from aipool.redis.url import connect
from aipool.settings import settings
from aipool.tracing.setup import wanted as tracing_wanted

log = logging.getLogger(__name__)


@cache
def shared_redis() -> redis.Redis[Any]:
    """The Redis client holding breaker, quota and ledger-spool state for this process."""
    client: redis.Redis[Any] = connect()
    return client


#: The pool's Celery app, handed over by ``workers.app`` when it is made: alerts are sent through
#: it. Handed over, not imported: ``workers.app`` imports this module (through its result backend
#: and signals), and ``tasks.client`` imports it in producers that must not make the pool's app.
_maintenance_app: Celery | None = None


def send_alerts_through(app: Celery) -> None:
    """Send this process's alerts (breaker transitions, missing models, providers' URLs not
    found) through ``app``."""
    global _maintenance_app
    _maintenance_app = app


def _to_maintenance(task: str, args: list[Any], headers: dict[str, Any] | None = None) -> None:
    if _maintenance_app is None:
        # Only a process that runs hops without the pool's app (a benchmark in one process) gets
        # here; a worker always has it, since it was started with -A workers.app.
        log.warning("%s not sent: this process has no pool app (workers.app)", task)
        return
    _maintenance_app.send_task(task, args=args, queue="maintenance", headers=headers)


#: The message header a breaker transition names its outage in (``BreakerTransition.tripped_at``).
TRIPPED_AT_HEADER = "aipool_tripped_at"


def header_number(request: Any, name: str) -> float | None:
    """A number a message carried in header ``name``: a worker's request has its headers as
    attributes, an eagerly applied task under ``headers``; anything but a number is ignored."""
    value = getattr(request, name, None)
    if value is None:
        value = (getattr(request, "headers", None) or {}).get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def alert_on_transition(event: BreakerTransition) -> None:
    """Hand a breaker transition to the maintenance queue, where alerts are sent and recorded.

    The worker that caused the transition must not wait on Slack or SMTP, so it only enqueues.
    The outage's ``tripped_at`` goes along in a header, not as a fourth argument: a maintenance
    worker of the earlier release, which takes three, still serves the message during a rolling
    upgrade (docs/operations.md, Upgrading with zero lost tasks), and the alert of one outage is
    known by it where the header is read.
    """
    headers = None if event.tripped_at is None else {TRIPPED_AT_HEADER: event.tripped_at}
    _to_maintenance(
        "aipool.breaker_transition",
        [event.provider, str(event.old), str(event.new)],
        headers=headers,
    )


#: How long a worker process waits before asking again for the same alert of the pool's own (a
#: missing model, a provider's URL not found): the alert goes once a day anyway; this keeps a
#: burst of failing requests from sending a task each.
ALERT_ASK_S = 60.0
_asked: dict[tuple[str, ...], float] = {}


def _ask_once(task: str, key: tuple[str, ...], args: Callable[[], list[Any]]) -> None:
    """Send ``task`` with ``args()`` to the maintenance queue unless it was sent for ``key`` in
    the last :data:`ALERT_ASK_S` seconds."""
    now = time.monotonic()
    if now - _asked.get((task, *key), float("-inf")) < ALERT_ASK_S:
        return
    _asked[(task, *key)] = now
    _to_maintenance(task, args())


def alert_on_missing_model(event: AttemptEvent) -> None:
    """Hand a call that met a missing model (``model_missing``) to the maintenance queue, where
    the alert naming the model is sent once a day (an observer of the hop runner)."""
    if event.replayed or event.attempt.code != "model_missing":
        return
    key = (event.hop.provider, event.hop.model)
    _ask_once("aipool.model_missing", key, lambda: list(key))


def alert_on_url_not_found(event: AttemptEvent) -> None:
    """Hand a call whose provider's URL does not serve its API (``not_found``: a 404 naming no
    model, a 405) to the maintenance queue, where the alert naming the provider and its base
    URL's host is sent once a day (an observer of the hop runner). Only the host goes: the
    provider's answer may quote the request, and the URL's path or query may hold a key."""
    if event.replayed or event.attempt.code != "not_found":
        return
    provider = event.hop.provider
    _ask_once("aipool.provider_not_found", (provider,), lambda: [provider, base_url_host(provider)])


@cache
def _ledger_engine() -> Any:

    return make_engine()


def _store_directly(record: UsageRecord) -> bool:
    """The ledger's write when Redis cannot queue it: straight into the database."""
    return store_now(_ledger_engine(), record)


@cache
def usage_log() -> UsageLog:
    """The ledger's write side for this process; in a worker, records ride with result writes."""
    return UsageLog(shared_redis(), fallback=_store_directly, outbox=OUTBOX)


@cache
def attempt_book() -> AttemptBook:
    """The process-wide :class:`AttemptBook`: every provider's breaker and quota, and the
    attempts' lifecycle, on the shared Redis."""
    client = shared_redis()
    return AttemptBook(
        client,
        breakers_for(client, listeners=[log_transition, observe_transition, alert_on_transition]),
        quotas_for(client),
    )


@cache
def hop_runner() -> HopRunner:
    """The process-wide :class:`HopRunner` (SDK clients and Redis scripts are built once); its
    steps are spans when the pool traces (:mod:`aipool.tracing.hops`)."""
    runner = HopRunner(
        attempt_book(),
        observers=[
            LedgerObserver(usage_log()),
            observe_attempt,
            alert_on_missing_model,
            alert_on_url_not_found,
        ],
        pricing=cost_usd,
        price_completion=completion_cost,
        lane_waits=oldest_ages,
    )
    if tracing_wanted():
        # deferred: only a pool that traces loads the tracing wrappers
        from aipool.tracing.hops import trace_hops

        trace_hops(runner)
    return runner


@cache
def response_store() -> ResponseStore:
    """The response cache's entries on the shared Redis (:mod:`aipool.cache`)."""
    current = settings()
    return ResponseStore(
        shared_redis(), max_bytes=current.cache_max_bytes, lead_s=current.cache_wait_s
    )


@cache
def cache_front() -> CacheFront:
    """The hop runner with the response cache in front: what the tasks and ``submit()`` call."""
    return CacheFront(hop_runner(), response_store)
