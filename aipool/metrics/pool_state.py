"""Gauges of the pool's shared state, read when Prometheus scrapes a worker's parent process.

Counters of hops live in the pool children (:mod:`aipool.metrics.hops`); what is shared by the whole
pool is read where it lives, at scrape time, so a gauge is never older than the scrape and never
counted twice by two replicas:

- every worker: ``aipool_worker_consumes{queue}`` (1 per queue it consumes);
- the maintenance worker (one replica) adds :class:`PoolState`: breakers, rate-limit pauses and
  quotas (Redis), queue
  depths (the broker), and the calendar budgets from the ledger, through the same
  :func:`aipool.budget.usage.budget_usage` the pool's own budget checks use.

A source that cannot be read is reported as ``aipool_state_up{source} 0`` and its gauges are left
out of that scrape; the worker's own metrics are still served.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from aipool.backlog import oldest_ages
from aipool.breaker import Breaker
from aipool.breaker.state import BreakerState
from aipool.budget import monthly_budget_usd
from aipool.budget.sender import alert_sender
from aipool.budget.usage import CALENDAR_QUOTAS, budget_usage
from aipool.contract.route import OTHER_SERVICE
from aipool.ledger.db import database_url, make_engine
from aipool.ledger.services import ServiceUsage, service_usage_day
from aipool.ledger.spend import service_month_cost
from aipool.ledger.usage_log import UsageLog
from aipool.periods import local_day, pool_zone
from aipool.quota import Quota
from aipool.redis.url import client_for, redis_url
from aipool.routing.table import load_table
from aipool.settings import settings
from aipool.settings.provider_limits import ProviderLimits
from aipool.views.service_report import share_use

log = logging.getLogger(__name__)

QueueDepths = Callable[[], Mapping[str, int]]


class WorkerQueues(Collector):
    """``aipool_worker_consumes{queue} 1`` for each queue this worker consumes."""

    def __init__(self, queues: Iterable[str]) -> None:
        self.queues = sorted(set(queues))

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "aipool_worker_consumes",
            "1 for each queue this worker consumes; summed over workers, the consumers per queue.",
            labels=["queue"],
        )
        for queue in self.queues:
            family.add_metric([queue], 1)
        yield family


class PoolState(Collector):
    """Breakers, quotas, queue depths and budgets of the whole pool, read at every scrape.

    ``redis`` is a callable returning the client of the pool's shared state, ``engine`` one
    returning the ledger's engine (both built on first use); ``queue_depths`` returns the messages
    waiting per queue. The three sources are read side by side, and one that has not answered
    within ``timeout_s`` counts as unreadable for that scrape: the endpoint answers within a
    probe's timeout whatever is down.
    """

    def __init__(
        self,
        *,
        redis: Callable[[], Any],
        engine: Callable[[], Any],
        queue_depths: QueueDepths,
        queue_ages: Callable[[], Mapping[str, float]] = dict,
        limits: Mapping[str, ProviderLimits],
        monthly_budget_usd: Callable[[], Any],
        zone: ZoneInfo,
        clock: Callable[[], float] = time.time,
        timeout_s: float = 5.0,
    ) -> None:
        self.redis = redis
        self.engine = engine
        self.queue_depths = queue_depths
        self.queue_ages = queue_ages
        self.limits = limits
        self.monthly_budget_usd = monthly_budget_usd
        self.zone = zone
        self.clock = clock
        self.timeout_s = timeout_s
        # One thread per source; a read still stuck from an earlier scrape keeps its thread, so
        # the next scrape's read of that source waits behind it and times out too.
        self._readers = ThreadPoolExecutor(max_workers=3, thread_name_prefix="aipool-state")

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "aipool_state_up",
            "1 when this scrape read the source (redis, broker, ledger), else 0.",
            labels=["source"],
        )
        reads = {
            source: self._readers.submit(_families, read)
            for source, read in (
                ("redis", self._redis_state),
                ("broker", self._queues),
                ("ledger", self._budgets),
            )
        }
        deadline = time.monotonic() + self.timeout_s
        for source, read in reads.items():
            try:
                families = read.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # a scrape reports an outage, it never fails on one
                log.warning("pool state: %s unreadable: %s", source, type(exc).__name__)
                up.add_metric([source], 0)
                continue
            up.add_metric([source], 1)
            yield from families
        yield up
        sender = GaugeMetricFamily(
            "aipool_alert_sender_info",
            "Who sends budget and breaker alerts (AIPOOL_ALERTS): pool or prometheus.",
            labels=["sender"],
        )
        try:
            sender.add_metric([alert_sender()], 1)
        except ValueError as exc:  # neither sender: the budget checks say so on every run
            log.warning("pool state: %s", exc)
        yield sender

    def _redis_state(self) -> Iterator[Metric]:

        client = self.redis()
        state = GaugeMetricFamily(
            "aipool_breaker_state",
            "1 for the state each provider's breaker is in (closed, half_open, open), else 0.",
            labels=["provider", "state"],
        )
        failures = GaugeMetricFamily(
            "aipool_breaker_consecutive_failures",
            "Consecutive failures the breaker has counted against the provider.",
            labels=["provider"],
        )
        paused = GaugeMetricFamily(
            "aipool_provider_paused_seconds",
            "Seconds left of the pause a rate-limited provider asked for (its declared retry "
            "delay, bounded by AIPOOL_RATE_LIMIT_PAUSE_MAX_S): skipped as rate_limited until "
            "then; 0 when not paused.",
            labels=["provider"],
        )
        used = GaugeMetricFamily(
            "aipool_quota_used",
            "What the quota guard has counted in the current window (rpm: the last 60 s; daily "
            "and monthly: the local calendar period), reservations in flight included.",
            labels=["provider", "quota"],
        )
        limit = GaugeMetricFamily(
            "aipool_quota_limit",
            "The quota guard's limit per window; absent for an unlimited window.",
            labels=["provider", "quota"],
        )
        for provider, pl in self.limits.items():
            snapshot = Breaker(client, provider, pl.breaker, self.clock).snapshot()
            for each in BreakerState:
                state.add_metric([provider, each.value], int(snapshot["state"] == each.value))
            failures.add_metric([provider], snapshot["consecutive_failures"])
            until = snapshot["paused_until"]
            paused.add_metric([provider], max(0.0, until - self.clock()) if until else 0.0)
            usage = Quota(client, provider, pl.quota, self.clock, self.zone).usage()
            for name in ("rpm", *CALENDAR_QUOTAS):
                window = usage[name]
                if window["used"] is not None:
                    used.add_metric([provider, name], window["used"])
                if window["limit"] is not None:
                    limit.add_metric([provider, name], window["limit"])
        pending = GaugeMetricFamily(
            "aipool_ledger_pending_records",
            "Usage records waiting in Redis for the ledger's drain (beat drains every 5 s).",
            value=UsageLog(client).pending(),
        )
        return iter([state, failures, paused, used, limit, pending])

    def _queues(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "aipool_queue_depth",
            "Messages waiting in each queue (taken ones excluded; workers prefetch one).",
            labels=["queue"],
        )
        for queue, count in sorted(self.queue_depths().items()):
            depth.add_metric([queue], count)
        age = GaugeMetricFamily(
            "aipool_queue_oldest_age_seconds",
            "How long the oldest message waiting in each queue and lane has waited, on Redis's "
            "clock (aipool.backlog; Redis broker only).",
            labels=["queue"],
        )
        for queue, seconds in sorted(self.queue_ages().items()):
            age.add_metric([queue], seconds)
        return iter([depth, age])

    def _budgets(self) -> Iterator[Metric]:
        now = datetime.fromtimestamp(self.clock(), UTC)
        usage = budget_usage(self.engine(), now, self.zone, self.limits)
        used = GaugeMetricFamily(
            "aipool_budget_used",
            "Ledger: use of each calendar quota in the local day or month (AIPOOL_TIMEZONE).",
            labels=["provider", "quota"],
        )
        limit = GaugeMetricFamily(
            "aipool_budget_limit",
            "Each provider's calendar quota, where it has one.",
            labels=["provider", "quota"],
        )
        cost = GaugeMetricFamily(
            "aipool_budget_cost_usd",
            "Ledger: cost in USD of the local day and month so far, per provider.",
            labels=["provider", "period"],
        )
        for provider, pl in self.limits.items():
            figures = usage.of(provider)
            for name in CALENDAR_QUOTAS:
                used.add_metric([provider, name], figures.used(name))
                allowed = getattr(pl.quota, name)
                if allowed:
                    limit.add_metric([provider, name], allowed)
            cost.add_metric([provider, "day"], float(figures.day_cost))
            cost.add_metric([provider, "month"], float(figures.month_cost))
        budget = GaugeMetricFamily(
            "aipool_budget_monthly_usd",
            "The monthly AI budget in USD (AIPOOL_MONTHLY_BUDGET_USD).",
            value=float(self.monthly_budget_usd()),
        )
        return iter([used, limit, cost, budget, *self._service_spend(now)])

    def _service_spend(self, now: datetime) -> list[Metric]:
        # Issue #24: each service's spend against its budget, labelled by the services the route
        # table declares and ``other`` (rows of a name no longer declared count as other).

        declared = load_table().services
        today = local_day(now, self.zone)
        cost = GaugeMetricFamily(
            "aipool_service_cost_usd",
            "Ledger: cost in USD of the local day and month so far, per producing service.",
            labels=["service", "period"],
        )
        budget = GaugeMetricFamily(
            "aipool_service_budget_usd",
            "Each declared service's monthly budget in USD (route table); 0: it has none.",
            labels=["service"],
        )
        figures: dict[str, dict[str, float]] = {
            name: {"day": 0.0, "month": 0.0} for name in [*declared, OTHER_SERVICE]
        }
        for name, usage in service_usage_day(self.engine(), today, self.zone).items():
            figures[name if name in declared else OTHER_SERVICE]["day"] += float(usage.cost_usd)
        for name, spent in service_month_cost(self.engine(), today, self.zone).items():
            figures[name if name in declared else OTHER_SERVICE]["month"] += float(spent)
        for name, periods in figures.items():
            for period, value in periods.items():
                cost.add_metric([name, period], value)
        for name, service in declared.items():
            budget.add_metric([name], float(service.monthly_budget_usd or 0))
        return [cost, budget, *self._service_shares(declared, today)]

    def _service_shares(self, declared: Mapping[str, Any], today: Any) -> list[Metric]:
        # Each declared share of a provider's daily limit, and the day's use of it (ledger).

        used = GaugeMetricFamily(
            "aipool_service_share_used",
            "Ledger: a service's use of the local day at a provider, for each share of a daily "
            "limit it has (limit: daily_tokens or daily_requests).",
            labels=["service", "provider", "limit"],
        )
        allowed = GaugeMetricFamily(
            "aipool_service_share_limit",
            "A service's share of a provider's daily limit, in the limit's unit (route table).",
            labels=["service", "provider", "limit"],
        )
        if any(service.shares for service in declared.values()):
            day = service_usage_day(self.engine(), today, self.zone)
            for name, service in declared.items():
                for share in share_use(service, day.get(name, ServiceUsage(name)), self.limits):
                    labels = [name, share.provider, share.limit]
                    used.add_metric(labels, share.used)
                    allowed.add_metric(labels, share.allowed)
        return [used, allowed]


def _families(read: Callable[[], Iterator[Metric]]) -> list[Metric]:
    return list(read())


#: How long running workers have to say which queues they consume (a broadcast waits this long).
INSPECT_TIMEOUT_S = 1.0


def queue_consumers(app: Any, timeout_s: float = INSPECT_TIMEOUT_S) -> dict[str, int]:
    """How many running workers consume each queue, as they say within ``timeout_s`` (a queue
    no worker names is absent)."""
    replies = app.control.inspect(timeout=timeout_s).active_queues() or {}
    counts: dict[str, int] = {}
    for queues in replies.values():
        for name in {q.get("name", "") for q in queues or ()}:
            counts[name] = counts.get(name, 0) + 1
    return counts


def broker_queue_depths(app: Any, queues: Iterable[str]) -> dict[str, int]:
    """Messages waiting in each of ``queues``, asked of the broker of Celery ``app``.

    A queue the broker does not know holds nothing (Redis drops an empty list).
    """
    depths = {}
    # A scrape waits a second for the broker, not the workers' five.
    options = {**(app.conf.broker_transport_options or {}), "socket_connect_timeout": 1.0}
    with app.connection_for_read(connect_timeout=1.0, transport_options=options) as conn:
        conn.ensure_connection(max_retries=0)  # one try: a scrape must stay short
        channel = conn.channel()
        try:
            for queue in queues:
                try:
                    depths[queue] = int(
                        channel.queue_declare(queue=queue, passive=True).message_count
                    )
                except conn.channel_errors:
                    depths[queue] = 0
                    channel.close()  # AMQP closes a channel after a failed passive declare
                    channel = conn.channel()
        finally:
            channel.close()
    return depths


def state_redis(url: str | None = None) -> Any:
    """A client for reading the pool's state at scrape time: one try, short timeouts.

    A scrape must answer within Prometheus's timeout even with Redis down; redis-py's default
    retries with backoff would take longer than that.
    """
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return client_for(
        url or redis_url(),
        socket_connect_timeout=1.0,
        socket_timeout=2.0,
        retry=Retry(NoBackoff(), 0),
    )


def _scrape_engine(make_engine: Callable[..., Any], pool_class: Any) -> Any:
    # No connection kept between scrapes, and a database that does not answer is given up after
    # two seconds (the workers' engine waits five).
    from sqlalchemy.engine import make_url

    url = database_url()
    if make_url(url).get_backend_name() == "postgresql":
        return make_engine(url, poolclass=pool_class, connect_args={"connect_timeout": 2})
    return make_engine(url, poolclass=pool_class)


def collectors_for(app: Any, consumed: Iterable[str]) -> list[Collector]:
    """The collectors a worker's parent adds to its metrics registry.

    Every worker reports the queues it consumes; the one consuming ``maintenance`` (a single
    replica) also reports the pool's state, so each gauge comes from one place. The clients are
    built on the first scrape, in the scraping thread of the parent: the parent forks its pool
    children before that, and the ledger engine keeps no connection between scrapes.
    """
    consumed = sorted(set(consumed))
    collectors: list[Collector] = [WorkerQueues(consumed)]
    if "maintenance" not in consumed:
        return collectors
    from sqlalchemy.pool import NullPool

    # deferred like the engine's pool: only the maintenance worker reads these
    from aipool.metrics.routines import RoutineState

    queues = [q.name for q in app.conf.task_queues or ()] or consumed
    state = functools.cache(state_redis)
    collectors.append(
        PoolState(
            redis=state,
            engine=functools.cache(lambda: _scrape_engine(make_engine, NullPool)),
            queue_depths=lambda: broker_queue_depths(app, queues),
            queue_ages=lambda: oldest_ages(queues),
            limits=settings().limits,
            monthly_budget_usd=monthly_budget_usd,
            zone=pool_zone(),
        )
    )
    collectors.append(RoutineState(state))
    return collectors
