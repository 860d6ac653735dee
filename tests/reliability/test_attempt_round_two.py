"""Interleavings the model test could not see (issue #42), with real worker processes.

Each test is one numbered case of the issue, against the simulated providers: a copy published
after its first hop answered with no route record; a late finish after Redis restarted empty; a
reply to ``begin`` lost after the script ran; a task id reused for another request. After each,
calls = ledger rows = quota per provider.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import redis
from sqlalchemy import Engine

from aipool.simulator import Simulator
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    open_leases,
    quota_charges,
    trail,
)
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.requests import CRITICAL, QUESTION
from tests.support.services import RedisServer
from tests.support.waiting import eventually
from tests.support.withholding_proxy import WithholdingProxy

pytestmark = pytest.mark.integration
TIMEOUT = 60
NO_RPM = {"AIPOOL_CLAUDE_RPM": "unlimited"}


def _idle(client: redis.Redis, queues: tuple[str, ...], timeout: float = 60.0) -> None:
    """Wait until no message waits or is held."""
    eventually(
        lambda: sum(client.llen(q) for q in queues) + client.hlen("unacked") == 0,
        timeout,
        "the broker emptied",
    )


def _force_open(client: redis.Redis, provider: str) -> None:
    """Open ``provider``'s breaker now, on Redis's clock (as three failures would)."""
    seconds, micros = client.time()
    client.hset(
        f"aipool:breaker:{provider}:state",
        mapping={"state": "open", "opened_at": seconds + micros / 1e6, "gen": 99, "failures": 3},
    )


def test_a_copy_sent_after_its_first_hop_answered_gets_that_answer(
    providers: Simulator,
    clean_redis: redis.Redis,
    celery_app: Any,
    pool: Worker,
    ledger: Engine,
) -> None:
    # Given a request without a deadline sent straight to Ollama (no route record), answered
    task_id = str(uuid.uuid4())
    first = celery_app.send_task(
        "ai.generate", kwargs={"request": QUESTION}, queue="router", task_id=task_id
    ).get(timeout=TIMEOUT)
    assert trail(first) == [("ollama", "ok")]
    assert not clean_redis.exists(f"aipool:attempt:{_journey(task_id)}:route")
    # When Ollama's breaker opens, and the producer publishes the same message again
    _force_open(clean_redis, "ollama")
    time.sleep(1.5)  # past the producer-side look at the breaker (LOOK_FRESH_S)
    celery_app.send_task(
        "ai.generate", kwargs={"request": QUESTION}, queue="router", task_id=task_id
    )
    time.sleep(2)
    _idle(clean_redis, ("router", "ollama", "gemini", "claude"))
    # Then the copy got Ollama's kept answer: Gemini was not called, one row is booked
    assert providers.calls("ollama") == 1
    assert providers.calls("gemini") == 0
    drain_everything(clean_redis, ledger)
    rows = ledger_rows(ledger, [task_id])
    assert [(r.provider, r.outcome) for r in rows] == [("ollama", "ok")]


def test_a_late_finish_after_redis_restarted_empty_books_its_call(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given a critical request in a 6 s Claude call, with the pool's records on a Redis that
    # keeps nothing on disk (the broker on another: a worker holding a message while its broker
    # restarts is another case of the issue)
    server = redis_server()
    client = server.client()
    broker = redis_server()
    urls = {"REDIS_URL": server.url, "CELERY_BROKER_URL": broker.url}
    spawn_worker(
        broker.url,
        concurrency=2,
        CELERY_RESULT_BACKEND=broker.url,
        AIPOOL_TIMEOUT_CLAUDE="10",
        **urls,
        **NO_RPM,
    )
    send = producer(broker.url)
    providers.set_fault("claude", "slow", ms=6000)
    task_id = str(uuid.uuid4())
    send.send(CRITICAL, task_id=task_id)
    eventually(lambda: providers.calls("claude") == 1, 30, "the first call in flight")
    # When Redis restarts empty and the producer sends the message again, which calls Claude
    # again (the first call's record is gone) while the first call still runs
    server.restart(down_for=0.5)
    again = send.send(CRITICAL, task_id=task_id)
    eventually(lambda: providers.calls("claude") == 2, 30, "the second call")
    answer = again.get(timeout=TIMEOUT)
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    eventually(lambda: open_leases(client) == 0, 30, "both calls finished")
    time.sleep(1)  # the first call's finish lands after its answer at most this late
    # Then both calls are booked: two ledger rows, two requests in the quota, as many as calls
    drain_everything(client, ledger)
    rows = ledger_rows(ledger, [task_id])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok"), ("claude", "ok")]
    assert len({r.call_id for r in rows}) == 2
    assert quota_charges(client) == ledger_charges(rows)
    assert providers.calls("claude") == quota_charges(client)["claude"].requests == 2
    record_figure("Redis restarted empty mid-call", "Claude calls / ledger rows", "2/2")


def test_a_lost_reply_to_begin_books_no_phantom(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given a worker whose Redis of records is behind a proxy that will lose the reply to the
    # next begin after it ran (held 3 s, past the worker's 2 s socket timeout)
    server = redis_server()
    client = server.client()
    broker = redis_server()
    with WithholdingProxy(server.port) as proxy:
        spawn_worker(
            broker.url,
            concurrency=1,
            REDIS_URL=proxy.url,
            CELERY_BROKER_URL=broker.url,
            CELERY_RESULT_BACKEND=broker.url,
            AIPOOL_REDIS_SOCKET_TIMEOUT="2",
            AIPOOL_TIMEOUT_CLAUDE="10",
            **NO_RPM,
        )
        send = producer(broker.url)
        proxy.withhold(b"$5\r\nbegin\r\n", 3.0)
        # When a critical request comes to Claude
        started = time.monotonic()
        answer = send.send(CRITICAL).get(timeout=TIMEOUT)
        took = time.monotonic() - started
        assert proxy.withheld == 1
    # Then the begin asked again is the same call: Claude answers, called once, booked once,
    # and the quota holds that call, not a phantom beside it
    assert (answer["status"], answer["provider"]) == ("ok", "claude"), answer["attempts"]
    assert providers.calls("claude") == 1
    assert open_leases(client) == 0
    drain_everything(client, ledger)
    rows = ledger_rows(ledger, [answer["request_id"]])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok")]
    assert quota_charges(client) == ledger_charges(rows)
    record_figure("begin's reply lost (held 3 s)", "answered by Claude in", round(took, 1), "s")


def test_a_task_id_reused_for_another_request_never_reads_the_first_answer(
    providers: Simulator,
    clean_redis: redis.Redis,
    celery_app: Any,
    pool: Worker,
    ledger: Engine,
) -> None:
    # Given a request answered under task id X
    task_id = str(uuid.uuid4())
    first = celery_app.send_task(
        "ai.generate", kwargs={"request": QUESTION}, queue="router", task_id=task_id
    ).get(timeout=TIMEOUT)
    assert (first["status"], first["provider"]) == ("ok", "ollama")
    # When the producer reuses X for another request, and reads X's result
    other = {**QUESTION, "prompt": "What is a node?"}
    celery_app.send_task("ai.generate", kwargs={"request": other}, queue="router", task_id=task_id)

    def stored() -> dict[str, Any]:
        raw = clean_redis.get(f"celery-task-meta-{task_id}")
        return dict(json.loads(raw or b"{}").get("result") or {})

    eventually(lambda: stored().get("status") == "error", TIMEOUT, "the second request answered")
    answer = stored()
    # Then it reads a refusal naming the reused id, never the first request's answer; no call
    # was made for it, and a copy of the first request under X is still its own
    assert answer["error"]["code"] == "task_id_reused"
    assert answer["content"] is None
    _idle(clean_redis, ("router", "ollama"))
    assert providers.calls("ollama") == 1
    drain_everything(clean_redis, ledger)
    rows = ledger_rows(ledger, [task_id])
    assert [(r.provider, r.outcome) for r in rows] == [("ollama", "ok")]


def _journey(task_id: str) -> str:
    from aipool.attempt.identity import journey_id

    return journey_id(task_id, QUESTION)
