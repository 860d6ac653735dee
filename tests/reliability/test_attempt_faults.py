"""Interleavings that broke "pay once, lose no paid answer" before the attempt had one lifecycle.

Each test is one bullet of issue #20, run with real worker processes against the simulated
providers: a duplicate publish, a countdown past the visibility timeout, a redelivery past the
deadline, a deadline that cut a healthy provider short, a producer whose clock is behind, an answer trickled byte by byte, a call killed by the hard time limit, a free provider's
hop redelivered. After each, the provider was called once per attempt, and the quota and the
ledger say what was called.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery.result import AsyncResult
from sqlalchemy import Engine, create_engine

from aipool.attempt.timing import record_latency
from aipool.simulator import Simulator
from tests.conftest import worker_env
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    open_leases,
    quota_charges,
    trail,
)
from tests.support.broker import wait_idle
from tests.support.faketime import shifted
from tests.support.figures import record_figure
from tests.support.pool import ALL_QUEUES, Worker
from tests.support.private_pool import PrivatePool, private_pool, send
from tests.support.producer import Producer
from tests.support.requests import CRITICAL, QUESTION, TOOL_QUESTION
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
TIMEOUT = 60
ROOT = Path(__file__).resolve().parents[2]
NO_RPM = {"AIPOOL_CLAUDE_RPM": "unlimited"}


def _accounted(client: redis.Redis, engine: Engine, request_ids: list[str]) -> list[Any]:
    """Drain the spool; assert the quota says what the ledger says; return the rows."""
    drain_everything(client, engine)
    rows = ledger_rows(engine, request_ids)
    assert quota_charges(client) == ledger_charges(rows)
    assert open_leases(client) == 0
    return rows


@pytest.fixture()
def private(
    simulator: Simulator, ledger_url: str, request: pytest.FixtureRequest
) -> Iterator[PrivatePool]:
    """A worker of the instrumented app on a database of its own, with ``request.param`` (env)."""
    env: dict[str, str] = getattr(request, "param", {})
    with private_pool(7, concurrency=2, DATABASE_URL=ledger_url, **NO_RPM, **env) as pool:
        yield pool


def test_a_request_published_twice_under_one_task_id_pays_once(
    providers: Simulator, private: PrivatePool, ledger_url: str
) -> None:
    # Given a producer that publishes one critical request twice under one task id (a retry
    # after a lost publish confirm), while Claude takes a second and a half to answer
    providers.set_fault("claude", "slow", ms=1500)
    task_id = str(uuid.uuid4())
    first = send(private, CRITICAL, task_id=task_id)
    send(private, CRITICAL, task_id=task_id)
    # When both messages are served
    answer = first.get(timeout=TIMEOUT)
    wait_idle(private.client, private.worker.queues)
    # Then Claude answered once, and once is what the quota and the ledger charge
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert providers.calls("claude") == 1
    engine = create_engine(ledger_url)
    rows = _accounted(private.client, engine, [task_id])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok")]
    engine.dispose()


@pytest.mark.parametrize(
    "private",
    [
        {
            "AIPOOL_VISIBILITY_TIMEOUT": "10",
            "AIPOOL_TASK_TIME_LIMIT": "8",
            "AIPOOL_TASK_SOFT_TIME_LIMIT": "6",
        }
    ],
    indirect=True,
)
def test_a_countdown_past_the_visibility_timeout_pays_once(
    providers: Simulator, private: PrivatePool, ledger_url: str
) -> None:
    # Given a message held back 25 s by its countdown, on a broker that hands an unacked message
    # back after 10 s (so it is delivered again, and again, while it waits)
    result = send(private, CRITICAL, countdown=25)
    # When it comes due
    answer = result.get(timeout=TIMEOUT)
    time.sleep(12)  # one more visibility timeout, for any copy still held
    wait_idle(private.client, private.worker.queues)
    # Then Claude was called once for it, and charged once
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert providers.calls("claude") == 1
    engine = create_engine(ledger_url)
    _accounted(private.client, engine, [result.id])
    engine.dispose()


@pytest.mark.parametrize(
    "private",
    [{"AIPOOL_TEST_CRASH_AT": "store", "AIPOOL_TEST_CRASH_DELAY": "3"}],
    indirect=True,
)
def test_a_paid_answer_redelivered_past_its_deadline_is_the_answer(
    providers: Simulator, private: PrivatePool, ledger_url: str
) -> None:
    # Given a request with a 2 s budget that Claude answers in 1 s, whose worker dies after the
    # answer was recorded and before its result is stored, 3 s later (past the deadline); the
    # pool knows Ollama, next on the chain, answers in 50 ms, so Claude's share of the deadline
    # is 2 - 0.05 - 0.3 s (aipool.attempt.timing; unknown, it would be a third)
    for _ in range(3):
        record_latency(private.client, "ollama", 0.05, every_s=0)
    providers.set_fault("claude", "slow", ms=1000)
    result = send(private, {**CRITICAL, "deadline_s": 2})
    # When the message comes back and is served again
    answer = result.get(timeout=TIMEOUT)
    wait_idle(private.client, private.worker.queues)
    # Then the producer gets Claude's answer (not a deadline skip to the static answer), and
    # Claude was not called again
    assert private.client.exists("aipool:test:crashed")
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert providers.calls("claude") == 1
    engine = create_engine(ledger_url)
    _accounted(private.client, engine, [result.id])
    engine.dispose()


@pytest.mark.parametrize("private", [{"AIPOOL_TEST_CRASH_AT": "store"}], indirect=True)
def test_a_free_providers_redelivered_hop_calls_it_once(
    providers: Simulator, private: PrivatePool
) -> None:
    # Given a tool request answered by Nemotron (no quota), whose worker dies before it stores
    # the result (the message comes back at once: the worker's parent requeues it)
    result = send(private, TOOL_QUESTION)
    answer = result.get(timeout=TIMEOUT)
    eventually(lambda: private.client.exists("aipool:test:crashed"), 30, "the crash")
    wait_idle(private.client, private.worker.queues)
    # Then the redelivered hop returned the kept answer: free does not mean "may run twice"
    assert answer["provider"] == "nemotron"
    assert providers.calls("nemotron") == 1


def test_a_deadline_that_cut_calls_short_never_opens_a_healthy_providers_breaker(
    providers: Simulator, clean_redis: redis.Redis, celery_app: Any, pool: Worker
) -> None:
    # Given Ollama answering in 0.6 s, and three requests that allow only 0.4 s each
    providers.set_fault("ollama", "slow", ms=600)
    for _ in range(3):
        hurried = celery_app.send_task(
            "ai.generate", kwargs={"request": {**QUESTION, "deadline_s": 0.4}}, queue="router"
        ).get(timeout=TIMEOUT)
        assert trail(hurried)[0] == ("ollama", "error")
    # When a request without a deadline comes next
    calm = celery_app.send_task("ai.generate", kwargs={"request": QUESTION}, queue="router").get(
        timeout=TIMEOUT
    )
    # Then Ollama answers it: the timeouts its requests' own deadlines made said nothing about it
    assert (calm["status"], calm["provider"]) == ("ok", "ollama")


def test_a_producer_whose_clock_is_behind_does_not_spend_its_requests_budget(
    providers: Simulator, clean_redis: redis.Redis, celery_app: Any, pool: Worker
) -> None:
    # Given a Python service routing locally with submit(), its host clock 10 s behind the pool's
    # (libfaketime shifts every clock the process reads)
    script = (
        "import json, sys; from tasks.client import submit; "
        "r = submit(json.loads(sys.argv[1])); print(r.id)"
    )
    request = json.dumps({**QUESTION, "deadline_s": 5})
    # When it submits a request with a 5 s budget
    done = subprocess.run(
        ["faketime", "-f", "-10s", sys.executable, "-c", script, request],
        env={**worker_env(), "FAKETIME_DONT_FAKE_MONOTONIC": "1"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer = AsyncResult(done.stdout.strip(), app=celery_app).get(timeout=TIMEOUT)
    # Then the budget counts from when the pool saw the request: Ollama answers it
    assert (answer["status"], answer["provider"]) == ("ok", "ollama")


def test_a_provider_trickling_its_answer_is_cut_at_the_calls_bound(
    providers: Simulator, clean_redis: redis.Redis, celery_app: Any, pool: Worker
) -> None:
    # Given Claude sending its answer one byte every 50 ms (each read in time, the whole answer
    # in about 20 s), with a 2 s timeout per call (the suite's setting)
    providers.set_fault("claude", "trickle", ms=50)
    started = time.monotonic()
    # When a critical request goes to it
    answer = celery_app.send_task("ai.generate", kwargs={"request": CRITICAL}, queue="router").get(
        timeout=TIMEOUT
    )
    # Then the call ends at its bound as a timeout, and the next provider answers in seconds
    assert trail(answer)[0] == ("claude", "error")
    assert answer["attempts"][0]["error"].startswith("timeout")
    assert answer["status"] == "ok" and answer["provider"] != "claude"
    assert time.monotonic() - started < 10


@pytest.fixture()
def hard_limited(
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
) -> Iterator[tuple[RedisServer, Producer]]:
    """A worker whose hop is killed by a 3 s hard time limit, with no soft limit."""
    server = redis_server()
    spawn_worker(
        server.url,
        AIPOOL_TASK_SOFT_TIME_LIMIT="unlimited",
        AIPOOL_TASK_TIME_LIMIT="3",
        AIPOOL_TIMEOUT_CLAUDE="5",
        **NO_RPM,
    )
    yield server, producer(server.url)


def test_a_call_killed_by_the_hard_time_limit_is_booked_at_its_estimate(
    providers: Simulator, hard_limited: tuple[RedisServer, Producer], ledger: Engine
) -> None:
    # Given Claude hanging past the hop's 3 s hard time limit (no soft limit to move on at)
    server, send_ = hard_limited
    providers.set_fault("claude", "hang", seconds=30)
    result = send_.send(CRITICAL)
    # When the hard limit kills the hop, and beat's sweep runs once the call's lease is over
    answer = result.get(timeout=TIMEOUT)
    assert answer["status"] == "error" and answer["error"]["code"] == "time_limit"
    client = server.client()
    lease_ends = float(client.zrange("aipool:attempt:leases", 0, 0, withscores=True)[0][1])
    time.sleep(max(0.0, lease_ends - client.time()[0] + 1))
    swept = send_.send_task("aipool.sweep_attempts", queue="maintenance")
    eventually(lambda: open_leases(client) == 0, 20, "the sweep")
    del swept
    # Then the call, which Claude may have billed, is in the ledger at its estimate, flagged,
    # and the quota holds the same
    rows = _accounted(client, ledger, [result.id])
    assert [(r.provider, r.outcome, r.estimated) for r in rows] == [("claude", "abandoned", True)]
    assert rows[0].input_tokens + rows[0].output_tokens > 0


def test_a_redis_that_stalls_for_20_s_mid_call_costs_no_second_call(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given a worker with four critical requests in Claude calls that take 2 s
    server = redis_server(appendonly=True)
    client = server.client()
    spawn_worker(server.url, concurrency=2, AIPOOL_TIMEOUT_CLAUDE="5", **NO_RPM)
    send_ = producer(server.url)
    providers.set_fault("claude", "slow", ms=2000)
    sent = [send_.send(CRITICAL) for _ in range(4)]
    eventually(lambda: providers.calls("claude") >= 2, 60, "calls in flight")
    # When Redis stops answering for 20 s (SIGSTOP) while the calls end, then carries on
    server.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
    time.sleep(20)
    server.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
    outcomes = send_.collect(sent, timeout=120)
    # Then every request is answered by Claude, each with one call, and quota = ledger = calls
    assert [o.answer and (o.answer["status"], o.answer["provider"]) for o in outcomes] == [
        ("ok", "claude")
    ] * 4
    assert providers.calls("claude") == 4
    wait_idle(client, ALL_QUEUES)
    rows = _accounted(client, ledger, [o.task_id for o in outcomes])
    assert [r.outcome for r in rows] == ["ok"] * 4
    record_figure("Redis SIGSTOP 20 s mid-call", "Claude calls for 4 requests", 4)


def test_a_worker_whose_clock_is_90_s_ahead_changes_nothing_the_pool_counts(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given two workers on one Redis, one of them with its host clock 90 s ahead, Ollama down
    # and Gemini allowed 10 requests a minute
    server = redis_server()
    client = server.client()
    limits = {"AIPOOL_GEMINI_RPM": "10", "AIPOOL_OLLAMA_RECOVERY_TIMEOUT": "120", **NO_RPM}
    spawn_worker(server.url, concurrency=1, **limits)
    spawn_worker(
        server.url,
        concurrency=1,
        **shifted("+90s"),
        **limits,
    )
    providers.set_fault("ollama", "down")
    send_ = producer(server.url)
    # When 14 simple questions arrive within the minute
    outcomes = send_.collect([send_.send(QUESTION) for _ in range(14)], timeout=120)
    # Then all are answered; Gemini took exactly its 10 a minute, the rest went on to Claude
    assert all(o.answer and o.answer["status"] == "ok" for o in outcomes)
    assert providers.calls("gemini") == 10
    # And every attempt called once, and quota = ledger = calls
    gemini_attempts = sum(
        1
        for o in outcomes
        for a in (o.answer or {})["attempts"]
        if a["provider"] == "gemini" and a["outcome"] == "ok"
    )
    assert gemini_attempts == 10
    wait_idle(client, ALL_QUEUES)
    _accounted(client, ledger, [o.task_id for o in outcomes])
    # And the RPM window was stamped on Redis's clock, not the fast worker's
    now = client.time()[0]
    stamps = [
        score for _, score in client.zrange("aipool:quota:gemini:window", 0, -1, withscores=True)
    ]
    assert stamps and max(stamps) <= now + 1
    record_figure("a worker 90 s ahead", "Gemini calls at rpm 10 for 14 requests", 10)
