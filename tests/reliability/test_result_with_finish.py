"""A pool process SIGKILLed on either side of the ``finish`` that writes its answer's result.

Where the result backend is the attempts' Redis, the ``finish`` that records an answer writes the
producer's result in the same step (issue #44, ``aipool/attempt/result_write.py``). Killed before
it, nothing of the answer is recorded: the call is abandoned once its lease ends and the request
goes on down the chain. Killed after it, the producer has its answer already, and the worker's
parent, finding a SUCCESS stored, acks the message rather than run it again. Either way the producer's result is
published once and each call is one ledger row.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from aipool.simulator import Simulator
from tests.support.accounting import drained_rows, ledger_charges, quota_charges, trail
from tests.support.private_pool import PrivatePool, private_pool, send, settled

pytestmark = pytest.mark.integration
TIMEOUT = 90
# priority critical starts at Claude, a limited (paid) provider, then ollama, gemini, static.
CRITICAL = {"prompt": "Summarise the incident timeline", "priority": "critical"}
FLAG = "aipool:test:crashed"
HOPS_KEY = "aipool:test:hops"


@pytest.fixture()
def crash_worker(request: Any, simulator: Simulator, ledger_url: str) -> Iterator[PrivatePool]:
    """A worker of its own database whose pool process kills itself once at ``request.param``
    (``tests/support/instrumented_app.py``), 3 s after it reached it; Claude's calls bounded at
    3 s, so an abandoned call's lease ends 13 s after it began."""
    with private_pool(
        7,
        concurrency=1,
        DATABASE_URL=ledger_url,
        AIPOOL_TEST_CRASH_AT=request.param,
        AIPOOL_TEST_CRASH_FLAG=FLAG,
        AIPOOL_TEST_CRASH_DELAY="3",
        AIPOOL_TEST_HOPS_KEY=HOPS_KEY,
        AIPOOL_TIMEOUT_CLAUDE="3",
        AIPOOL_CLAUDE_RPM="unlimited",
    ) as pool:
        yield pool


def _listen(pool: PrivatePool, task_id: str) -> Any:
    """The producer's channel of ``task_id``'s result (Celery's backend publishes there)."""
    channel = pool.client.pubsub()
    channel.subscribe(f"celery-task-meta-{task_id}")
    assert channel.get_message(timeout=5)["type"] == "subscribe"
    return channel


def _published(channel: Any) -> list[dict[str, Any]]:
    seen = []
    while (message := channel.get_message(timeout=1)) is not None:
        if message["type"] == "message":
            seen.append(json.loads(message["data"]))
    return seen


def _hops_on(pool: PrivatePool, provider: str) -> int:
    """How many hops ran on ``provider``'s lanes (a critical request waits in its urgent one)."""
    queues = (provider, f"{provider}.urgent")
    return sum(json.loads(raw)["queue"] in queues for raw in pool.client.lrange(HOPS_KEY, 0, -1))


@pytest.mark.parametrize("crash_worker", ["finish"], indirect=True)
def test_killed_before_finish_the_request_moves_on_and_is_answered_once(
    crash_worker: PrivatePool, healthy: Simulator, ledger_url: str
) -> None:
    # Given a pool process that dies after Claude answered, before its finish recorded anything
    pool = crash_worker
    task_id = f"killed-before-finish-{uuid.uuid4().hex}"
    channel = _listen(pool, task_id)
    # When a critical request goes through it
    answer = send(pool, CRITICAL, task_id=task_id).get(timeout=TIMEOUT)
    settled(pool, FLAG)
    # Then Claude was called once, its call abandoned when its lease ended, and the request was
    # answered further down the chain; the producer's result was published once
    assert pool.client.exists(FLAG)
    assert healthy.calls("claude") == 1
    assert trail(answer)[0] == ("claude", "abandoned"), answer
    assert answer["status"] == "ok" and answer["provider"] != "claude"
    published = _published(channel)
    assert [(m["status"], m["result"]["provider"]) for m in published] == [
        ("SUCCESS", answer["provider"])
    ]
    # And each call is one ledger row: Claude's at its estimate, the answer's with its tokens
    rows = drained_rows(pool.client, ledger_url, [task_id])
    assert [(r.provider, r.outcome) for r in rows] == [
        ("claude", "abandoned"),
        (answer["provider"], "ok"),
    ]
    assert ledger_charges(rows)["claude"] == quota_charges(pool.client)["claude"]
    channel.close()


@pytest.mark.parametrize("crash_worker", ["store"], indirect=True)
def test_killed_after_finish_the_producer_has_its_answer_already_and_once(
    crash_worker: PrivatePool, healthy: Simulator, ledger_url: str
) -> None:
    # Given a pool process that dies 3 s after its finish recorded Claude's answer
    pool = crash_worker
    task_id = f"killed-after-finish-{uuid.uuid4().hex}"
    channel = _listen(pool, task_id)
    # When a critical request goes through it
    answer = send(pool, CRITICAL, task_id=task_id).get(timeout=TIMEOUT)
    # Then the producer reads Claude's answer, written by finish before the process died
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert _hops_on(pool, "claude") == 1
    # And the worker's parent, finding that SUCCESS stored, acked the message instead of giving
    # it back (Celery 5.7): no second delivery, and the result was published once
    settled(pool, FLAG)
    assert _hops_on(pool, "claude") == 1
    assert [(m["status"], m["result"]["provider"]) for m in _published(channel)] == [
        ("SUCCESS", "claude")
    ]
    assert healthy.calls("claude") == 1
    # And the call is one ledger row, as the quota holds it
    rows = drained_rows(pool.client, ledger_url, [task_id])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok")]
    assert ledger_charges(rows)["claude"] == quota_charges(pool.client)["claude"]
    channel.close()
