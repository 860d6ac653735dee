"""Workers crash mid-call (SIGKILL of a pool child, or of the whole worker): no answer is lost.

A pool child killed while it waits on a provider gives its message back at once (late acks,
``task_reject_on_worker_lost``); a whole worker killed leaves its messages unacknowledged in Redis
until the broker's visibility timeout hands them to another worker. Either way every request is
answered once, every attempt is one ledger row, and the quota counters equal the ledger.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine

from aipool.simulator import Simulator
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    open_leases,
    quota_charges,
    rows_trail,
    spooled,
    trail,
)
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.producer import Outcome, Producer
from tests.support.requests import CRITICAL
from tests.support.services import RedisServer
from tests.support.sizes import sized
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

#: Long enough to kill a process in the middle of the call, inside Claude's timeout for these
#: workers. Two calls must overlap when a whole worker dies, and a fresh pool child spends a
#: second or two building its SDK client before it calls: those calls last longer.
SLOW_MS = 600
OVERLAPPING_MS = 2500
SLOW_CALLS = {"AIPOOL_TIMEOUT_CLAUDE": "5"}
#: Claude's 5 requests a minute would send these tests to the next provider; the day's limits stay.
NO_RPM = {"AIPOOL_CLAUDE_RPM": "unlimited"}
#: Kills in a row: the second shows the first left nothing behind (five under make soak).
KILLS = sized(2, 5)
#: A worker that dies whole gives its messages back after this many seconds (Redis broker): more
#: than the hard time limit, as in production (where it is the hard limit + 60 s).
VISIBILITY_TIMEOUT = 20
SHORT_LIMITS = {
    "AIPOOL_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
    "AIPOOL_TASK_TIME_LIMIT": "15",
    "AIPOOL_TASK_SOFT_TIME_LIMIT": "12",
}
#: Longer than a call takes before the kill, shorter than the visibility timeout.
BUDGET_S = 10


def _in_flight(providers: Simulator, provider: str, calls: int) -> None:
    # A fresh pool child imports the provider SDKs before its first call: seconds on a busy machine.
    eventually(lambda: providers.calls(provider) >= calls, 60, f"{calls} calls at {provider}")


def _assert_answered_once_and_accounted(
    outcomes: list[Outcome], client: Any, ledger: Engine
) -> dict[str, Any]:
    """Every outcome a contract answer; one spool record and one ledger row per attempt; quota
    equal to the ledger, with no reservation left open. Returns the drain's figures."""
    assert all(o.answered for o in outcomes), [o.error for o in outcomes if not o.answered]
    assert all(o.answer and o.answer["request_id"] == o.task_id for o in outcomes)
    records = Counter((r.request_id, r.attempt) for r in spooled(client))
    assert set(records.values()) == {1}, f"attempts recorded twice: {records.most_common(3)}"
    expected = sum(len(trail(o.answer or {})) for o in outcomes)
    assert sum(records.values()) == expected
    drained = drain_everything(client, ledger)
    assert (drained.written, drained.duplicates, drained.dead) == (expected, 0, 0)
    rows = ledger_rows(ledger, [o.task_id for o in outcomes])
    for o in outcomes:
        assert rows_trail(rows, o.task_id) == trail(o.answer or {})
    assert quota_charges(client) == ledger_charges(rows)
    assert open_leases(client) == 0
    return {"rows": len(rows), "duplicates": drained.duplicates}


def test_pool_children_killed_mid_call_lose_no_answer_and_charge_each_attempt_once(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given a worker whose one pool child waits on a slow Claude call, a second request queued
    # (one child: the child that is killed is certainly the one in the middle of the call)
    server = redis_server()
    worker = spawn_worker(server.url, concurrency=1, **NO_RPM, **SLOW_CALLS)
    send = producer(server.url)
    providers.set_fault("claude", "slow", ms=SLOW_MS)
    outcomes: list[Outcome] = []
    # When, KILLS times in a row, the pool child is SIGKILLed in the middle of its call
    for _ in range(KILLS):
        calls = providers.calls("claude")
        batch = [send.send(CRITICAL) for _ in range(2)]
        _in_flight(providers, "claude", calls + 1)
        assert not any(r.ready() for r in batch), "the call ended before the kill"
        worker.kill_child()
        outcomes += send.collect(batch, timeout=60)
        worker.wait_children(1)
    # Then every request is answered; the killed call is never made again (abandoned once its
    # lease ends, billed at its estimate) and its request is answered by the next provider; every
    # attempt is one spool record and one ledger row; the quota counters equal the ledger and no
    # call is left open
    assert [o.answer and o.answer["status"] for o in outcomes] == ["ok"] * 2 * KILLS
    killed = [o for o in outcomes if trail(o.answer or {})[0] == ("claude", "abandoned")]
    assert len(killed) == KILLS
    assert all(len(trail(o.answer or {})) >= 2 for o in killed)
    assert providers.calls("claude") == 2 * KILLS
    figures = _assert_answered_once_and_accounted(outcomes, server.client(), ledger)
    assert worker.alive()
    scenario = "pool child SIGKILL mid-call"
    record_figure(scenario, "children killed mid-call", KILLS)
    record_figure(scenario, "requests answered", f"{len(outcomes)}/{2 * KILLS}")
    record_figure(scenario, "ledger rows per attempt", 1 if figures["duplicates"] == 0 else "dup")
    record_figure(scenario, "provider calls", f"{providers.calls('claude')} for {len(outcomes)}")


def test_a_whole_worker_killed_mid_call_is_recovered_by_the_next_worker(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    # Given a worker (visibility timeout 20 s) whose two pool children have answered before, with
    # two requests in a slow Claude call -- one with a 10 s latency budget -- and four more queued
    server = redis_server()
    client = server.client()
    first = spawn_worker(server.url, concurrency=2, **NO_RPM, **SHORT_LIMITS, **SLOW_CALLS)
    send = producer(server.url)
    warm_up = send.collect([send.send(CRITICAL) for _ in range(2)], timeout=60)
    providers.set_fault("claude", "slow", ms=OVERLAPPING_MS)
    calls = providers.calls("claude")
    in_flight = [send.send({**CRITICAL, "deadline_s": BUDGET_S}), send.send(CRITICAL)]
    _in_flight(providers, "claude", calls + 2)
    queued = [send.send(CRITICAL) for _ in range(4)]
    assert not any(r.ready() for r in in_flight), "a call ended before the kill"
    # When the whole worker is SIGKILLed and a new one takes its place
    first.kill()
    killed_at = time.monotonic()
    providers.heal("claude")
    spawn_worker(server.url, concurrency=2, **NO_RPM, **SHORT_LIMITS, **SLOW_CALLS)
    patience = 2 * VISIBILITY_TIMEOUT + 20
    outcomes = send.collect(in_flight + queued, timeout=patience)
    # Then every request is answered once: the calls in flight are abandoned (billed at their
    # estimate, never made again), the one whose budget ran out meanwhile gets the static
    # answer after `deadline` skips, the other gets the next provider's answer; the queued ones Claude's
    scenario = "whole worker SIGKILL mid-call"
    answered = [o for o in outcomes if o.answered]
    record_figure(scenario, "requests answered", f"{len(answered)}/{len(outcomes)}")
    if len(answered) == len(outcomes):
        recovery = round(max(o.at for o in outcomes) - killed_at, 1)
        record_figure(scenario, "recovery, kill to last answer", recovery, "s")
    else:
        record_figure(scenario, "recovery, kill to last answer", f"over {patience}", "s")
    assert [o.answer and o.answer["status"] for o in outcomes] == ["fallback"] + ["ok"] * 5
    assert trail(outcomes[0].answer or {})[:2] == [("claude", "abandoned"), ("ollama", "deadline")]
    assert trail(outcomes[1].answer or {})[0] == ("claude", "abandoned")
    assert providers.calls("claude") == calls + 2 + 4
    # And no call of the dead worker is left open (the redeliveries abandoned them; beat's sweep,
    # sent here once more, finds nothing)
    send.send_task("aipool.sweep_attempts", queue="maintenance")
    released = eventually(lambda: open_leases(client) == 0, 10, "dead worker's calls abandoned")
    record_figure(scenario, "dead worker's calls left open", 0 if released else "some")
    _assert_answered_once_and_accounted(warm_up + outcomes, client, ledger)
