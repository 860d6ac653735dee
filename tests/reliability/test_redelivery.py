"""A message redelivered after its worker died is never a second paid call.

A pool process is SIGKILLed at the two points where at-least-once delivery bites: after a call
failed and before the next hop's message is published, and after a call answered and before the
message is acked. The broker gives the message back, another process runs the same attempt again,
and the provider must not be called twice for it; quota and ledger must equal the calls made.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine

from tasks.client import submit
from tests.conftest import worker_env
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    quota_charges,
    trail,
)
from tests.support.pool import Worker

pytestmark = pytest.mark.integration
TIMEOUT = 60
# priority critical starts at Claude, a limited (paid) provider, then ollama, gemini, static.
CRITICAL = {"prompt": "Summarise the incident timeline", "priority": "critical"}


@pytest.fixture()
def crash_worker(request, celery_app, simulator, clean_redis) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """A worker on every queue whose pool process kills itself once at ``request.param``."""
    flag = f"aipool:test:crashed:{uuid.uuid4().hex}"
    worker = Worker(
        worker_env(AIPOOL_TEST_CRASH_AT=request.param, AIPOOL_TEST_CRASH_FLAG=flag),
        concurrency=1,
        app="tests.support.instrumented_app",
    )
    worker.flag = flag  # type: ignore[attr-defined]
    try:
        worker.wait_ready(celery_app)
        yield worker
    finally:
        worker.stop()
        clean_redis.delete(flag)


def _settled(redis_client: Any, worker: Worker, timeout: float = 30.0) -> None:
    """Wait until the crash happened and the redelivered message is done (queues and unacked
    messages empty)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        crashed = redis_client.exists(worker.flag)  # type: ignore[attr-defined]
        busy = sum(redis_client.llen(q) for q in worker.queues) + redis_client.hlen("unacked")
        if crashed and not busy:
            return
        time.sleep(0.1)
    raise TimeoutError(f"redelivery not finished: {worker.log()}")


@pytest.mark.parametrize("crash_worker", ["ack"], indirect=True)
def test_a_paid_answer_redelivered_before_its_ack_is_not_bought_again(
    crash_worker, healthy, redis_client, ledger_url
) -> None:  # type: ignore[no-untyped-def]
    # Given a pool process that dies after Claude answered and the result was stored, before ack
    # When a critical request goes through it
    answer = submit(CRITICAL).get(timeout=TIMEOUT)
    _settled(redis_client, crash_worker)
    # Then the producer has Claude's answer, and the redelivered message did not call Claude again
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert healthy.calls("claude") == 1
    # And the quota and the ledger hold that one call with its real tokens
    engine = create_engine(ledger_url)
    drain_everything(redis_client, engine)
    rows = ledger_rows(engine, [answer["request_id"]])
    tokens = answer["usage"]["input_tokens"] + answer["usage"]["output_tokens"]
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok")]
    assert ledger_charges(rows)["claude"] == quota_charges(redis_client)["claude"]
    assert quota_charges(redis_client)["claude"].requests == 1
    assert quota_charges(redis_client)["claude"].tokens == tokens
    engine.dispose()


@pytest.mark.parametrize("crash_worker", ["dispatch"], indirect=True)
def test_a_failed_call_redelivered_before_the_next_hop_is_not_made_again(
    crash_worker, healthy, redis_client, ledger_url
) -> None:  # type: ignore[no-untyped-def]
    # Given Claude failing once, and a pool process that dies right after that failed call,
    # before the next hop's message is published
    healthy.set_fault("claude", "error_500", times=1)
    # When a critical request goes through it
    answer = submit(CRITICAL).get(timeout=TIMEOUT)
    _settled(redis_client, crash_worker)
    # Then the redelivered message moved on without calling Claude a second time
    assert healthy.calls("claude") == 1
    assert trail(answer)[0] == ("claude", "error")
    assert (answer["status"], answer["provider"]) == ("ok", "ollama")
    # And Claude was charged one request and no tokens, in the quota as in the ledger
    engine = create_engine(ledger_url)
    drain_everything(redis_client, engine)
    rows = ledger_rows(engine, [answer["request_id"]])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "error"), ("ollama", "ok")]
    assert ledger_charges(rows)["claude"] == quota_charges(redis_client)["claude"]
    assert quota_charges(redis_client)["claude"].requests == 1
    assert quota_charges(redis_client)["claude"].tokens == 0
    engine.dispose()
