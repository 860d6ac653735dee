"""The pool at a glance: what ``aipool status`` shows and ``GET /api/v1/health/ai-usage`` serves.

One reading (:func:`read_snapshot`) builds both, so the endpoint (ADR-006 §7) and the command never
disagree: where the state was read, each provider's breaker and quota use beside its limits
(Redis), the messages waiting per queue (the broker), today's usage per provider and the month's
cost against the monthly budget (the ledger), and the usage records still waiting in Redis to be
drained into the ledger. It only reads: no breaker trial slot is taken, no quota reserved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from aipool.backlog import oldest_ages
from aipool.errors import PoolUnavailable
from aipool.ledger.db import make_engine
from aipool.ledger.summary import ProviderSummary, summarize_day
from aipool.ledger.usage_log import UsageLog
from aipool.periods import local_day, pool_zone
from aipool.redis.replication import Replication, read_replication
from aipool.routing.table import load_table
from aipool.settings import settings
from aipool.views.pool_location import describe_database, describe_redis
from aipool.views.service_report import ServicesReport, read_services


@dataclass(frozen=True)
class MonthBudget:
    """The month's cost so far, all providers, against ``AIPOOL_MONTHLY_BUDGET_USD``."""

    month: str
    cost_usd: Decimal
    budget_usd: Decimal

    @property
    def used(self) -> float:
        """The fraction of the budget spent (1.0: all of it)."""
        return float(self.cost_usd / self.budget_usd) if self.budget_usd else 0.0


@dataclass(frozen=True)
class Snapshot:
    """One reading of the pool, and where it was read from. ``today`` and ``budget`` are ``None``
    while the ledger has no tables; ``pending`` is ``None`` when it could not be read."""

    redis: str
    ledger: str
    providers: dict[str, Any]
    queues: dict[str, int]
    today: tuple[str, list[ProviderSummary]] | None
    budget: MonthBudget | None
    pending: int | None
    #: Each service's use of today and the month (issue #24); ``None`` while the ledger has none.
    services: ServicesReport | None = None
    #: How long the oldest message of each queue and lane has waited (s); Redis broker only.
    queue_ages: dict[str, float] = field(default_factory=dict)
    #: How many running workers consume each queue and lane; ``None``: they could not be asked.
    consumers: dict[str, int] | None = None
    #: The master and its replicas' lag, on Sentinel or when the master has replicas; else None.
    replication: Replication | None = None
    #: Why the ledger could not be read (its database down): ``today``, ``budget`` and
    #: ``services`` are unknown, not empty; Redis's part (breakers, quotas, queues) still holds.
    ledger_error: str | None = None

    def unserved(self) -> list[str]:
        """The pool's lanes that hold messages and that no running worker consumes."""
        if self.consumers is None:
            return []
        return [q for q, depth in self.queues.items() if depth and not self.consumers.get(q)]

    def to_json(self) -> dict[str, Any]:
        """The reading as JSON data (``aipool status --json``, the usage endpoint)."""

        return {
            "redis": describe_redis(self.redis),
            "ledger": describe_database(self.ledger),
            "providers": self.providers,
            "queues": self.queues,
            "queue_ages": self.queue_ages,
            "queue_consumers": None
            if self.consumers is None
            else {queue: self.consumers.get(queue, 0) for queue in self.queues},
            "today": None
            if self.today is None
            else {
                "day": self.today[0],
                "providers": [s.to_json() for s in self.today[1]],
                "cost_usd": str(sum((s.cost_usd for s in self.today[1]), Decimal(0))),
            },
            "budget": None
            if self.budget is None
            else {
                "month": self.budget.month,
                "cost_usd": str(self.budget.cost_usd),
                "budget_usd": str(self.budget.budget_usd),
                "used": round(self.budget.used, 6),
            },
            "pending_records": self.pending,
            "services": None if self.services is None else self.services.to_json(),
            "replication": None if self.replication is None else self.replication.to_json(),
            "ledger_error": self.ledger_error,
        }


def ledger_engine(url: str) -> Any:
    """An engine on an existing ledger; raises :class:`PoolUnavailable` when it has no tables yet
    (a SQLite file that does not exist is not created)."""
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    sqlite_file = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if sqlite_file and not Path(sqlite_file).exists():
        raise PoolUnavailable(
            f"no ledger at {describe_database(url)}: nothing was recorded there; set "
            "DATABASE_URL to the pool's ledger (or run `aipool migrate` to create this one)"
        )
    engine = make_engine(url)
    if not inspect(engine).has_table("ai_usage_logs"):
        engine.dispose()
        raise PoolUnavailable(
            f"the ledger at {describe_database(url)} has no tables yet: run `aipool migrate`"
        )
    return engine


def pending_records(redis_client: Any) -> int | None:
    """Usage records waiting in Redis to be drained into the ledger, ``None`` if unknown."""

    try:
        return int(UsageLog(redis_client).pending())
    except Exception:  # a peek: the numbers beside it are right either way
        return None


def pool_queues() -> tuple[str, ...]:
    """The queues a reading counts: the pool's six and Celery's default one."""
    from celeryconfig import QUEUES

    # deferred: loads celery, kombu (~242 ms of start-up) only when this runs
    from workers.default_queue import CELERY_DEFAULT_QUEUE

    return (*QUEUES, CELERY_DEFAULT_QUEUE)


def read_snapshot(
    redis_client: Any,
    *,
    redis_url: str,
    ledger_url: str,
    app: Any,
    queues: Iterable[str] | None = None,
    engine: Callable[[str], Any] = ledger_engine,
    now: datetime | None = None,
) -> Snapshot:
    """Read the pool: Redis through ``redis_client`` (at ``redis_url``), the broker of Celery
    ``app``, the ledger at ``ledger_url`` (opened with ``engine``, which raises
    :class:`PoolUnavailable` when there is no ledger yet)."""
    # deferred: loads rich, httpx, prometheus-client (~323 ms of start-up) only when this runs
    from aipool.budget.usage import budget_usage
    from aipool.metrics.pool_state import broker_queue_depths
    from aipool.views.health import usage_report

    moment = now or datetime.now(UTC)
    zone = pool_zone()
    providers = usage_report(redis_client, tz=zone)
    depths = broker_queue_depths(app, pool_queues() if queues is None else queues)
    today: tuple[str, list[ProviderSummary]] | None = None
    budget: MonthBudget | None = None
    services: ServicesReport | None = None
    from sqlalchemy.exc import OperationalError

    ledger_error: str | None = None
    try:
        ledger = engine(ledger_url)
    except PoolUnavailable:
        ledger = None
    except OperationalError as exc:
        # The database is down or unreachable: an on-call reader still needs the breakers,
        # quotas and queues Redis holds, and to know what could not be read.
        ledger, ledger_error = None, _said(exc)
    if ledger is not None:
        try:
            day = local_day(moment, zone)
            today = day.isoformat(), summarize_day(ledger, day, zone)
            month_cost = budget_usage(ledger, moment, zone).month_cost
            budget = MonthBudget(day.strftime("%Y-%m"), month_cost, settings().monthly_budget_usd)
            services = _services(ledger, day, zone)
        except OperationalError as exc:
            today, budget, services = None, None, None
            ledger_error = _said(exc)
        finally:
            ledger.dispose()
    return Snapshot(
        redis=redis_url,
        ledger=ledger_url,
        providers=providers,
        queues=depths,
        today=today,
        budget=budget,
        pending=pending_records(redis_client),
        services=services,
        queue_ages=_oldest_ages(list(depths)),
        consumers=_consumers(app),
        replication=read_replication(redis_client),
        ledger_error=ledger_error,
    )


def _said(exc: Any) -> str:
    """A database error in one line, in its driver's words."""
    return " ".join(str(exc.orig or exc).split())[:300]


def _services(ledger: Any, day: Any, zone: Any) -> ServicesReport:

    return read_services(ledger, day, zone, load_table(), settings().limits)


def _consumers(app: Any) -> dict[str, int] | None:
    # Asked of the workers by broadcast (a second's wait): a broker that fails here was read
    # above, so this says only that the workers could not be asked.
    from aipool.metrics.pool_state import queue_consumers

    try:
        return queue_consumers(app)
    except Exception:
        return None


def _oldest_ages(queues: list[str]) -> dict[str, float]:
    # Reading the ages also stamps what waits (aipool.backlog): status is a pool component too.
    from redis.exceptions import RedisError

    try:
        return {q: round(age, 1) for q, age in oldest_ages(queues).items()}
    except RedisError:
        return {}
