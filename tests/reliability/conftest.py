"""Fixtures of the fault-injection suite: servers a test may crash, workers it may kill.

Everything here is private to one test and torn down after it, so a test can SIGKILL, restart and
flush without touching the session's Redis database or worker:

- ``providers``: the session's simulated providers, healthy at the start and healed at the end
  (calls held by a ``hang`` fault are let go).
- ``redis_server``: ``redis_server(appendonly=False)`` starts a private ``redis-server``.
- ``postgres_server``: a private PostgreSQL cluster, started.
- ``sentinel_set`` (tests/conftest.py): ``sentinel_set()`` starts a private master, replica and
  three sentinels.
- ``producer``: ``producer(redis_url, master=None)`` builds a plain Celery producer on that Redis
  (``master``: the sentinels' name for it, with a ``sentinel://`` URL).
- ``spawn_worker``: ``spawn_worker(redis_url, queues=..., concurrency=..., loglevel=..., **env)``
  starts a real worker on that Redis (ledger on the session's PostgreSQL unless ``DATABASE_URL``
  is given; ``AIPOOL_REDIS_SENTINEL_MASTER`` with a ``sentinel://`` URL) and waits until it
  answers a ping.
- ``ledger``: an engine on the session's ledger database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine

from aipool.ledger.db import make_engine
from aipool.simulator import Simulator
from tests.conftest import worker_env
from tests.support.pool import ALL_QUEUES, READY_TIMEOUT_S, Worker
from tests.support.producer import Producer
from tests.support.services import PostgresServer, RedisServer, SentinelSet


@pytest.fixture()
def providers(healthy: Simulator) -> Iterator[Simulator]:
    """The simulated providers: healthy now, and healed again when the test ends."""
    yield healthy
    healthy.reset()


@pytest.fixture()
def redis_server() -> Iterator[Callable[..., RedisServer]]:
    """Start private Redis servers; every one is stopped (and its files removed) afterwards."""
    servers: list[RedisServer] = []

    def start(*, appendonly: bool = False) -> RedisServer:
        server = RedisServer(appendonly=appendonly).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture()
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL cluster, started; destroyed afterwards."""
    server = PostgresServer()
    try:
        yield server.start()
    finally:
        server.destroy()


@pytest.fixture()
def producer() -> Iterator[Callable[..., Producer]]:
    """Build producers on a given Redis URL; each is closed afterwards."""
    made: list[Producer] = []

    def make(redis_url: str, master: str | None = None, *, pools_backend: bool = False) -> Producer:
        built = Producer(redis_url, master, pools_backend=pools_backend)
        made.append(built)
        return built

    yield make
    for built in made:
        built.close()


@pytest.fixture()
def spawn_worker(
    simulator: Simulator,
    ledger_url: str,
    redis_server: Callable[..., RedisServer],
    sentinel_set: Callable[..., SentinelSet],
) -> Iterator[Callable[..., Worker]]:
    """Start real workers on a given Redis; every one is stopped (or reaped) afterwards.

    Depends on ``redis_server`` and ``sentinel_set`` so that private Redis servers outlive the
    workers using them: a worker's warm shutdown talks to its broker.
    """
    started: list[Worker] = []

    def spawn(
        redis_url: str,
        *,
        queues: tuple[str, ...] = ALL_QUEUES,
        concurrency: int = 2,
        wait: bool = True,
        loglevel: str = "INFO",
        **env: str,
    ) -> Worker:
        settings = {"REDIS_URL": redis_url, "DATABASE_URL": ledger_url, **env}
        worker = Worker(
            worker_env(**settings), queues=queues, concurrency=concurrency, loglevel=loglevel
        )
        started.append(worker)
        if wait:
            with Producer(redis_url, env.get("AIPOOL_REDIS_SENTINEL_MASTER")) as probe:
                worker.wait_ready(probe.app, timeout=READY_TIMEOUT_S)
        return worker

    yield spawn
    for worker in started:
        worker.stop()


@pytest.fixture()
def ledger(ledger_url: str) -> Iterator[Engine]:
    """An engine on the session's ledger database."""
    engine = make_engine(ledger_url)
    yield engine
    engine.dispose()
