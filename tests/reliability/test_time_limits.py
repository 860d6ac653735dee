"""Issue #42, case 5: timeouts have one owner, the pool's settings.

Gemini healthy but answering in 4 s, five requests sent with Celery's ``soft_time_limit=2``: the
producer's limit used to ride along to every hop (``tasks/generate.py`` carried it), fire inside
Gemini's call, and be booked as Gemini's timeout: five failures, its breaker open. Now every hop
runs under the pool's own limits (``AIPOOL_TASK_SOFT_TIME_LIMIT``/``AIPOOL_TASK_TIME_LIMIT``), so a
producer's limit cannot shorten a provider's call below its timeout.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine, create_engine

from aipool.simulator import Simulator
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    open_leases,
    quota_charges,
    trail,
)
from tests.support.pool import Worker
from tests.support.private_pool import PrivatePool, private_pool, send
from tests.support.producer import Producer
from tests.support.requests import CLOUD_TRIAGE, CRITICAL
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
TIMEOUT = 60
AT_GEMINI = {"prompt": CLOUD_TRIAGE, "user_id": "reliability"}


@pytest.fixture()
def patient(simulator: Simulator, ledger_url: str) -> Iterator[PrivatePool]:
    """A worker whose Gemini calls may take 10 s (the suite's default is 2 s), under the pool's
    default limits (soft 90 s, hard 120 s)."""
    with private_pool(14, DATABASE_URL=ledger_url, AIPOOL_TIMEOUT_GEMINI="10") as pool:
        yield pool


def test_a_producers_soft_time_limit_never_opens_a_healthy_providers_breaker(
    providers: Simulator, patient: PrivatePool
) -> None:
    # Given Gemini healthy but answering in 4 s
    providers.set_fault("gemini", "slow", ms=4000)
    # When five requests that start at Gemini are sent with a soft time limit of 2 s
    sent = [send(patient, AT_GEMINI, soft_time_limit=2) for _ in range(5)]
    answers = [result.get(timeout=TIMEOUT) for result in sent]
    # Then Gemini answers each of them: the producer's limit did not cut its calls
    assert [(a["status"], a["provider"]) for a in answers] == [("ok", "gemini")] * 5, [
        trail(a) for a in answers
    ]
    # And its breaker is closed: the next request is Gemini's too, no hop passed over
    providers.heal("gemini")
    answer = send(patient, AT_GEMINI).get(timeout=TIMEOUT)
    assert trail(answer) == [("gemini", "ok")], answer


def test_the_soft_time_limit_while_finish_waits_for_a_stalled_redis_loses_no_paid_answer(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given a worker whose hops have a soft limit of 6 s (Claude's timeout, 4 s, fits under it)
    # and two critical requests in Claude calls that take 2 s
    server = redis_server()
    client = server.client()
    spawn_worker(
        server.url,
        AIPOOL_TASK_SOFT_TIME_LIMIT="6",
        AIPOOL_TASK_TIME_LIMIT="15",
        AIPOOL_VISIBILITY_TIMEOUT="30",
        AIPOOL_TIMEOUT_CLAUDE="4",
        AIPOOL_CLAUDE_RPM="unlimited",
    )
    send_ = producer(server.url)
    providers.set_fault("claude", "slow", ms=2000)
    sent = [send_.send(CRITICAL) for _ in range(2)]
    eventually(lambda: providers.calls("claude") >= 2, 60, "calls in flight")
    # When Redis stops answering for 8 s while the calls end: each finish waits on it (a socket
    # timeout of 5 s), and the soft limit fires while it does
    server.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
    time.sleep(8)
    server.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
    outcomes = send_.collect(sent, timeout=90)
    # Then each producer gets Claude's answer (not `time_limit`), paid once and booked as answered
    assert [o.answer and (o.answer["status"], o.answer["provider"]) for o in outcomes] == [
        ("ok", "claude")
    ] * 2, [o.answer["error"] if o.answer else repr(o.error) for o in outcomes]
    assert providers.calls("claude") == 2
    drain_everything(client, ledger)
    rows = ledger_rows(ledger, [o.task_id for o in outcomes])
    assert [r.outcome for r in rows] == ["ok"] * 2
    assert quota_charges(client) == ledger_charges(rows)
    assert open_leases(client) == 0


@pytest.fixture()
def killed_after_finish(simulator: Simulator, ledger_url: str) -> Iterator[PrivatePool]:
    """A worker of the instrumented app whose hop, once its answer is recorded with its attempt
    (``finish`` ran), stalls before it stores its result until the 8 s hard time limit kills it
    (no soft limit: nothing else cuts it first)."""
    with private_pool(
        15,
        DATABASE_URL=ledger_url,
        AIPOOL_TASK_SOFT_TIME_LIMIT="unlimited",
        AIPOOL_TASK_TIME_LIMIT="8",
        AIPOOL_CLAUDE_RPM="unlimited",
        AIPOOL_TEST_CRASH_AT="store",
        AIPOOL_TEST_CRASH_DELAY="60",
    ) as pool:
        yield pool


def test_a_hard_kill_after_finish_still_gives_the_producer_the_recorded_answer(
    providers: Simulator, killed_after_finish: PrivatePool, ledger_url: str
) -> None:
    # Given a critical request Claude answers, whose hop is killed by the hard time limit after
    # the answer was recorded with its attempt and before the result was stored (issue #42,
    # suspected: the worker's parent stored `time_limit`, and the kept answer never reached the
    # producer)
    pool = killed_after_finish
    sent = send(pool, CRITICAL)
    # When the hard limit kills the hop and the worker's parent answers for it
    answer = sent.get(timeout=TIMEOUT)
    # Then the producer reads Claude's answer, not `time_limit`; Claude was called once and the
    # call is one ledger row, booked as answered
    # (finish wrote the result itself, issue #44: the producer may read it before the stall)
    eventually(lambda: pool.client.exists("aipool:test:crashed"), 30, "the hop stalled")
    assert (answer["status"], answer.get("provider")) == ("ok", "claude"), answer
    assert providers.calls("claude") == 1
    engine = create_engine(ledger_url)
    drain_everything(pool.client, engine)
    rows = ledger_rows(engine, [sent.id])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok")]
    assert quota_charges(pool.client) == ledger_charges(rows)
    assert open_leases(pool.client) == 0
    engine.dispose()
