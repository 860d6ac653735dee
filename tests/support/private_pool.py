"""A worker and a producer on a Redis database of their own.

The session's ``pool`` worker serves every queue of the test database, so a test that needs its
messages served by one particular worker (instrumented, crashing, differently configured) runs
that worker on a database nobody else uses: every message of the test reaches it and no other.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
from celery import Celery

from tests.conftest import TEST_REDIS_URL, worker_env
from tests.support.pool import ALL_QUEUES, ROOT, Worker


@dataclass
class PrivatePool:
    """The producer side (``app``, ``client``) and the ``worker`` serving it."""

    app: Celery
    client: redis.Redis
    worker: Worker
    url: str


def private_url(db: int) -> str:
    """The test Redis server's database ``db``."""
    return TEST_REDIS_URL.rsplit("/", 1)[0] + f"/{db}"


@contextmanager
def private_pool(
    db: int,
    *,
    app: str = "tests.support.instrumented_app",
    concurrency: int = 2,
    queues: tuple[str, ...] = ALL_QUEUES,
    **env: str,
) -> Iterator[PrivatePool]:
    """Start a worker of ``app`` on database ``db`` (emptied first and after), with ``env``."""
    url = private_url(db)
    client = redis.Redis.from_url(url)
    client.flushdb()
    producer = Celery(f"aipool-private-{db}")
    producer.config_from_object("celeryconfig")
    producer.conf.broker_url = producer.conf.result_backend = url
    worker = Worker(
        worker_env(REDIS_URL=url, CELERY_BROKER_URL=url, CELERY_RESULT_BACKEND=url, **env),
        queues=queues,
        concurrency=concurrency,
        app=app,
    )
    try:
        worker.wait_ready(producer)
        yield PrivatePool(producer, client, worker, url)
    finally:
        worker.stop()
        client.flushdb()
        client.close()
        producer.close()


def send(pool: PrivatePool, request: dict[str, Any], **options: Any) -> Any:
    """``ai.generate`` sent by name to the router, as a producer without aipool does."""
    return pool.app.send_task("ai.generate", kwargs={"request": request}, queue="router", **options)


def settled(pool: PrivatePool, flag: str, timeout: float = 60.0) -> None:
    """Wait until the pool process crashed (``flag``, set by ``tests/support/instrumented_app.py``)
    and every message is done: its queues, unacked messages and their index all empty."""
    client, worker = pool.client, pool.worker
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = sum(client.llen(q) for q in worker.queues) + client.hlen("unacked")
        busy += client.zcard("unacked_index")
        if client.exists(flag) and not busy:
            return
        time.sleep(0.1)
    raise TimeoutError(f"redelivery not finished: {worker.log()}")


def importing_producer(pool: PrivatePool, code: str, *args: str, **env: str) -> Any:
    """Run ``code`` in a new Python process that imports the pool (``submit()``), on ``pool``'s
    Redis with ``env``; the JSON it printed last."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=worker_env(
            REDIS_URL=pool.url, CELERY_BROKER_URL=pool.url, CELERY_RESULT_BACKEND=pool.url, **env
        ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])
