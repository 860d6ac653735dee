"""RabbitMQ as the broker: quorum queues, and a whole worker's requests back the moment it dies.

On Redis a worker that dies whole leaves its messages unacknowledged until the visibility timeout
(180 s by default) hands them to another worker. RabbitMQ requeues a consumer's unacknowledged
messages as soon as its connection drops, so the next worker answers them at once; results,
breakers, quotas and the ledger spool stay in Redis.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine

import celeryconfig
from aipool.simulator import Simulator
from tests.conftest import TEST_REDIS_URL
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    quota_charges,
    rows_trail,
    trail,
)
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.rabbitmq import (
    amqp_producer,
    drop_vhost,
    fresh_vhost,
    queue_types,
    vhost_name,
)
from tests.support.requests import CRITICAL
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

#: Long enough to kill the worker in the middle of two overlapping Claude calls (a fresh pool
#: child builds its SDK client first), inside Claude's timeout for these workers.
OVERLAPPING_MS = 2500
SLOW_CALLS = {"AIPOOL_TIMEOUT_CLAUDE": "5"}
#: Claude's 5 requests a minute would send these tests to the next provider; the day's limits stay.
NO_RPM = {"AIPOOL_CLAUDE_RPM": "unlimited"}
#: How long the producer waits for every answer: well under the Redis broker's visibility timeout,
#: so only a redelivery that does not wait for one can meet it.
PATIENCE_S = 60


@pytest.fixture()
def crash_vhost() -> Iterator[str]:
    """A RabbitMQ virtual host of this test alone (no session worker consumes from it)."""
    name = vhost_name(TEST_REDIS_URL, "_crash")
    yield fresh_vhost(name)
    drop_vhost(name)


def test_every_queue_of_the_pool_is_a_quorum_queue_on_rabbitmq(amqp_pool, amqp_url) -> None:  # type: ignore[no-untyped-def]
    # Given a worker serving every queue on RabbitMQ / When its queues are listed
    types = queue_types(vhost_name(TEST_REDIS_URL))
    # Then each of the pool's queues is a quorum queue
    assert {q: types.get(q) for q in celeryconfig.QUEUES} == dict.fromkeys(
        celeryconfig.QUEUES, "quorum"
    )


def test_a_whole_worker_killed_mid_call_on_rabbitmq_is_redelivered_at_once(
    providers: Simulator,
    crash_vhost: str,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    ledger: Engine,
) -> None:
    # Given a worker on RabbitMQ (results and pool state in a Redis of this test) with two
    # requests in a slow Claude call and two more queued behind them
    server = redis_server()
    client = server.client()
    app = amqp_producer(crash_vhost, server.url)
    env = {"CELERY_BROKER_URL": crash_vhost, **NO_RPM, **SLOW_CALLS}
    first = spawn_worker(server.url, concurrency=2, wait=False, **env)
    first.wait_ready(app)
    providers.set_fault("claude", "slow", ms=OVERLAPPING_MS)
    calls = providers.calls("claude")
    send = lambda: app.send_task("ai.generate", kwargs={"request": CRITICAL}, queue="router")  # noqa: E731
    in_flight = [send(), send()]
    eventually(lambda: providers.calls("claude") >= calls + 2, 60, "two calls at claude")
    queued = [send(), send()]
    assert not any(r.ready() for r in in_flight), "a call ended before the kill"
    # When the whole worker is SIGKILLed and a new one takes its place
    first.kill()
    killed_at = time.monotonic()
    providers.heal("claude")
    second = spawn_worker(server.url, concurrency=2, wait=False, **env)
    second.wait_ready(app)
    answers = [r.get(timeout=PATIENCE_S) for r in in_flight + queued]
    recovery = round(time.monotonic() - killed_at, 1)
    # Then every request is answered by Claude, without waiting for any visibility timeout
    scenario = "whole worker SIGKILL mid-call, RabbitMQ broker"
    record_figure(scenario, "requests answered", f"{len(answers)}/4")
    record_figure(scenario, "recovery, kill to last answer", recovery, "s")
    assert [a["status"] for a in answers] == ["ok"] * 4
    assert [a["request_id"] for a in answers] == [r.id for r in in_flight + queued]
    assert recovery < celeryconfig.visibility_timeout
    # and nothing is left on the broker
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        # (a critical request waits in Claude's urgent lane)
        lanes = ("router", "claude", "claude.urgent")
        left = {q: channel.queue_declare(q, passive=True).message_count for q in lanes}
    assert left == dict.fromkeys(lanes, 0)
    # and each attempt reached the ledger once, with the quota counters equal to it
    drained = drain_everything(client, ledger)
    assert (drained.duplicates, drained.dead) == (0, 0)
    rows = ledger_rows(ledger, [a["request_id"] for a in answers])
    for answer in answers:
        assert rows_trail(rows, answer["request_id"]) == trail(answer)
    assert quota_charges(client) == ledger_charges(rows)
    app.close()
