"""A pool as an operator watches it: real prefork workers serving metrics, on a Redis of their own.

One provider worker (router and every provider queue) and one maintenance worker, each serving its
``/metrics`` as in production (``PROMETHEUS_MULTIPROC_DIR``, ``AIPOOL_METRICS_PORT``, to the bearer
of ``AIPOOL_METRICS_TOKEN`` only), with the
maintenance worker set to leave budget and breaker alerts to Prometheus (``AIPOOL_ALERTS``). They
run on a private ``redis-server`` and a scratch ledger database, so no other test's workers take
their messages and no other test's usage shows in their gauges. Started once for the package.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from aipool.lanes import ROUTINE_LANES, URGENT_LANES
from aipool.simulator import Simulator
from tests.conftest import LOOPBACK, TEST_DATABASE_URL, worker_env
from tests.support.metrics import metrics_env, scrape
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.services import RedisServer, free_port

PROVIDER_QUEUES = ROUTINE_LANES + URGENT_LANES


@dataclass
class MonitoredPool:
    """The workers, where their metrics are served, and a plain producer on their Redis."""

    redis: RedisServer
    producer: Producer
    providers: Worker
    maintenance: Worker
    providers_port: int
    maintenance_port: int
    ledger_url: str
    simulator: Simulator

    @property
    def targets(self) -> list[str]:
        """Both workers' metrics endpoints, as Prometheus's targets."""
        return [f"127.0.0.1:{self.providers_port}", f"127.0.0.1:{self.maintenance_port}"]

    def scrape(self, port: int) -> str:
        """One worker's ``/metrics`` text, read with the token."""
        return scrape(port)


def _scratch_ledger() -> str:
    from aipool.ledger.testing import empty_ledger, ledger_engine

    url = make_url(TEST_DATABASE_URL)
    assert url.host in LOOPBACK
    name = f"{url.database}_monitoring"[:63]
    engine = ledger_engine(name)
    empty_ledger(engine)
    engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def _routes_with_a_share(directory: Path) -> Path:
    """The packaged route table, with a share of Gemini's day for one service: the maintenance
    worker then serves the per-service share gauges the rules read."""
    from aipool.routing.table import DEFAULT_ROUTES_FILE

    path = directory / "routes.toml"
    path.write_text(
        DEFAULT_ROUTES_FILE.read_text(encoding="utf-8")
        + "\n[services.summaries.shares.gemini]\ndaily_tokens = 0.1\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="package")
def monitored_pool(simulator: Simulator) -> Iterator[MonitoredPool]:
    redis = RedisServer().start()
    directory = Path(tempfile.mkdtemp(prefix="aipool-monitoring-"))
    ledger_url = _scratch_ledger()
    shared = worker_env(
        REDIS_URL=redis.url,
        CELERY_BROKER_URL=redis.url,
        CELERY_RESULT_BACKEND=redis.url,
        DATABASE_URL=ledger_url,
        # ADR-006's recovery window, not the suite's 2 s (tests/conftest.py): an Ollama outage
        # test holds the breaker open across several requests, and on a loaded machine 2 s passed
        # before its fourth request, which then went through as a half-open trial (#44).
        AIPOOL_OLLAMA_RECOVERY_TIMEOUT="60",
    )
    providers_port, maintenance_port = free_port(), free_port()
    workers: list[Worker] = []
    producer = Producer(redis.url)
    try:
        workers.append(
            Worker(
                {**shared, **metrics_env(directory / "providers", providers_port)},
                queues=PROVIDER_QUEUES,
            )
        )
        workers.append(
            Worker(
                {
                    **shared,
                    **metrics_env(directory / "maintenance", maintenance_port),
                    "AIPOOL_ALERTS": "prometheus",
                    "AIPOOL_ROUTES_FILE": str(_routes_with_a_share(directory)),
                },
                queues=("maintenance",),
                concurrency=1,
            )
        )
        for worker in workers:
            worker.wait_ready(producer.app, timeout=60)
        yield MonitoredPool(
            redis,
            producer,
            workers[0],
            workers[1],
            providers_port,
            maintenance_port,
            ledger_url,
            simulator,
        )
    finally:
        for worker in workers:
            worker.stop()
        producer.close()
        redis.stop()
        simulator.reset()
