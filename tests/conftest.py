"""Shared fixtures: the test Redis database, simulated providers and real worker processes.

Environment is fixed before anything imports the Celery app, because ``celeryconfig`` reads it at
import time. Every provider base URL points at a loopback simulator; a check refuses anything else.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import pytest
import redis

# A shell starts a background command with Ctrl-C ignored, and every process it starts inherits
# that (an ignored signal stays ignored across exec). The suite run in the background (CI's
# shards) would start `aipool redis`, the demo and workers deaf to the SIGINT its Ctrl-C tests
# send, and leave them running: give the suite, and so its children, the usual Ctrl-C.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TEST_REDIS_URL = os.environ.get("AIPOOL_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
TEST_DATABASE_URL = os.environ.get(
    "AIPOOL_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/aipool_test"
)
os.environ["REDIS_URL"] = TEST_REDIS_URL
os.environ["DATABASE_URL"] = TEST_DATABASE_URL
# Short timeouts keep the hang and slow faults quick; keys are dummies the simulator accepts.
for _provider in ("OLLAMA", "GEMINI", "CLAUDE", "NEMOTRON"):
    os.environ[f"AIPOOL_TIMEOUT_{_provider}"] = "2"
# Ollama's breaker recovers in 2 s instead of 30 s so recovery is testable; thresholds stay ADR's.
os.environ["AIPOOL_OLLAMA_RECOVERY_TIMEOUT"] = "2"
os.environ.setdefault("GEMINI_API_KEY", "test-gemini-key")
os.environ.setdefault("ANTHROPIC_API_KEY", "test-anthropic-key")
os.environ.setdefault("NVIDIA_API_KEY", "nvapi-test-key")

from aipool.simulator import Simulator  # noqa: E402
from tests.support.pool import Worker  # noqa: E402
from tests.support.rabbitmq import (  # noqa: E402
    BrokerUnderTest,
    amqp_producer,
    drop_vhost,
    fresh_vhost,
    vhost_name,
)
from tests.support.services import SentinelSet  # noqa: E402

LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_ENV_FOR = {
    "ollama": "OLLAMA_BASE_URL",
    "gemini": "GEMINI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "NVIDIA_BASE_URL",
}


def assert_loopback(url: str) -> None:
    host = urlparse(url).hostname
    if host not in LOOPBACK:
        raise RuntimeError(f"tests may only talk to loopback, not {url}")


@pytest.fixture(scope="session")
def simulator() -> Iterator[Simulator]:
    """Simulated providers for the whole session; their URLs are exported to the environment."""
    with Simulator() as sim:
        for kind, env in _ENV_FOR.items():
            url = sim.base_urls[kind]
            assert_loopback(url)
            os.environ[env] = url
        yield sim


@pytest.fixture()
def healthy(simulator: Simulator) -> Simulator:
    """Every simulated provider healthy and its call counters at zero."""
    simulator.reset()
    return simulator


@pytest.fixture(scope="session")
def redis_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(TEST_REDIS_URL)
    client.ping()
    yield client
    client.close()


@pytest.fixture()
def clean_redis(redis_client: redis.Redis) -> redis.Redis:
    """The test database, emptied of breaker, quota and ledger state (not of queued tasks)."""
    for pattern in ("aipool:*",):
        for key in redis_client.scan_iter(pattern):
            redis_client.delete(key)
    return redis_client


@pytest.fixture()
def sentinel_set() -> Iterator[Callable[..., SentinelSet]]:
    """Start private Sentinel sets (a master, a replica, three sentinels: real processes on
    loopback ports of their own); every one is stopped afterwards."""
    started: list[SentinelSet] = []

    def start(**options: int) -> SentinelSet:
        made = SentinelSet(**options)
        started.append(made)
        return made.start()

    yield start
    for made in started:
        made.stop()


def worker_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("OLLAMA_BASE_URL", "GEMINI_BASE_URL", "ANTHROPIC_BASE_URL", "NVIDIA_BASE_URL"):
        if name in env:
            assert_loopback(env[name])
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def ledger_url() -> str:
    """The PostgreSQL ledger the workers write to, created and migrated for the session."""
    from sqlalchemy.engine import make_url

    from aipool.ledger.testing import scratch_database

    url = make_url(TEST_DATABASE_URL)
    assert url.host in LOOPBACK
    server = url.set(database=None).render_as_string(hide_password=False)
    return scratch_database(str(url.database), server=server)


@pytest.fixture(scope="session")
def celery_app(simulator: Simulator, redis_client: redis.Redis, ledger_url: str):  # type: ignore[no-untyped-def]
    redis_client.flushdb()
    from workers.app import app

    return app


@pytest.fixture(scope="session")
def pool(celery_app, simulator: Simulator) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """One real worker process serving every queue, for the session."""
    worker = Worker(worker_env())
    try:
        worker.wait_ready(celery_app)
        yield worker
    finally:
        worker.stop()


@pytest.fixture(scope="session")
def amqp_url() -> Iterator[str]:
    """A RabbitMQ virtual host of this run (quorum by default), dropped at the end."""
    name = vhost_name(TEST_REDIS_URL)
    yield fresh_vhost(name)
    drop_vhost(name)


@pytest.fixture(scope="session")
def amqp_app(amqp_url: str) -> Iterator[Any]:
    """A producer on the run's RabbitMQ virtual host, reading results from the test Redis."""
    app = amqp_producer(amqp_url, TEST_REDIS_URL)
    yield app
    app.close()


@pytest.fixture(scope="session")
def amqp_pool(celery_app, simulator: Simulator, amqp_url: str, amqp_app) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """One real worker on RabbitMQ serving every queue. Only the broker is named, as an operator
    switching brokers would: results, breakers and quotas follow ``REDIS_URL``."""
    worker = Worker(worker_env(CELERY_BROKER_URL=amqp_url))
    try:
        worker.wait_ready(amqp_app)
        yield worker
    finally:
        worker.stop()


@pytest.fixture(params=["redis", "amqp"])
def broker(request: pytest.FixtureRequest, celery_app) -> BrokerUnderTest:  # type: ignore[no-untyped-def]
    """Runs a test on each broker: Redis (the session pool) and RabbitMQ (its own worker)."""
    if request.param == "redis":
        request.getfixturevalue("pool")
        return BrokerUnderTest("redis", TEST_REDIS_URL, celery_app)
    request.getfixturevalue("amqp_pool")
    return BrokerUnderTest(
        "amqp", request.getfixturevalue("amqp_url"), request.getfixturevalue("amqp_app")
    )
