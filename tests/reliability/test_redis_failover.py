"""The pool's Redis lost under a steady load, and the pool serving again with nobody restarting it.

Two shapes of the same test. With Sentinel (a master, a replica, three sentinels, all real
``redis-server`` processes): the master is SIGKILLed and stays down, the sentinels promote the
replica, and every pool process (worker, beat, the producer) finds the new master by itself. With
a single Redis keeping an append-only file: it is SIGKILLed and started again on the same port a
moment later, as a supervisor would. Meanwhile a producer keeps sending free requests (Ollama)
and paid ones (Claude, quota-counted).

What is measured, and printed: how long the failover (or restart) took, when the pool answered
again, how each request ended. What is asserted does not depend on this machine's speed: every
request is answered (a provider's answer or the chain's end), requests sent once the new master
is there are answered by a provider, no attempt called its provider twice, and calls, ledger rows
and quota counters agree per provider once beat has drained the spool.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import Engine

from aipool.contract.vocabulary import CALLED_OUTCOMES
from aipool.ledger.testing import empty_ledger
from aipool.simulator import Simulator
from tests.conftest import worker_env
from tests.support.accounting import (
    dead_letters,
    ledger_charges,
    ledger_rows,
    open_leases,
    quota_charges,
    rows_trail,
    trail,
)
from tests.support.beat import Beat
from tests.support.broker import leftover_messages
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.producer import Outcome, Producer
from tests.support.requests import CRITICAL, QUESTION
from tests.support.services import RedisServer, SentinelSet
from tests.support.sizes import sized_s
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

WORKER_ENV = {
    "AIPOOL_CLAUDE_RPM": "unlimited",
    "AIPOOL_VISIBILITY_TIMEOUT": "20",
    "AIPOOL_TASK_TIME_LIMIT": "15",
    "AIPOOL_TASK_SOFT_TIME_LIMIT": "12",
}
#: One request every this many seconds, alternately free and paid.
SEND_EVERY_S = 0.2
#: Load before the master is killed, and after the new one answers (longer under make soak).
BEFORE_S = sized_s(2, 30)
AFTER_S = sized_s(4, 60)
#: How long the single Redis stays down before its supervisor starts it again: about what the
#: sentinels here take to promote the replica.
RESTART_DOWN_S = 2.5
#: How long a producer waits for the answers still due once the load stops.
PATIENCE_S = 60
#: How long a worker that lost its broker says it waits before trying again (Celery's log).
RETRY_IN = re.compile(r"Trying again in ([\d.]+) seconds?")
#: The simulated providers whose calls are counted here: one free, one paid.
PROVIDERS = ("ollama", "claude")


class RedisUnderTest:
    """The pool's Redis in one shape: where it is, how it is lost, when it is back."""

    name: str
    url: str
    env: dict[str, str]
    master: str | None = None
    client: Any

    def lose(self) -> None:
        """Lose the serving Redis now; what brings it back (sentinels, a supervisor) acts on
        its own."""
        raise NotImplementedError

    def back(self) -> bool:
        """Whether a Redis serves the pool's URL again."""
        raise NotImplementedError


class Failover(RedisUnderTest):
    """A master, a replica and three sentinels; the master is killed for good."""

    name = "Sentinel failover, master killed"

    def __init__(self, redis: SentinelSet) -> None:
        self.redis = redis
        self.url, self.env, self.master = redis.url, redis.env, redis.master
        self.client = redis.client()
        self.old_port = 0

    def lose(self) -> None:
        self.old_port = self.redis.kill_master().port

    def back(self) -> bool:
        return self.redis.promoted(self.old_port)


class Restart(RedisUnderTest):
    """One Redis with an append-only file; killed, and started again on its port."""

    name = "single Redis killed, restarted from its AOF"

    def __init__(self, redis: RedisServer) -> None:
        self.redis = redis
        self.url = redis.url
        self.env = {"REDIS_URL": redis.url}
        self.client = redis.client()
        self.supervisor: threading.Timer | None = None

    def lose(self) -> None:
        self.redis.crash()
        self.supervisor = threading.Timer(RESTART_DOWN_S, self.redis.start)
        self.supervisor.start()

    def back(self) -> bool:
        process = self.redis.process
        return process is not None and process.poll() is None and self.redis.answers()


@dataclass
class Load:
    """A steady load from one producer: requests sent one after another at a steady pace, free
    and paid in turn (a send waits while the broker is away, and the pace resumes after), and
    each answer awaited by a thread of its own, so its arrival is known when it comes."""

    send: Producer
    sent_at: dict[str, float] = field(default_factory=dict)
    outcomes: list[Outcome] = field(default_factory=list)
    refused: list[BaseException] = field(default_factory=list)
    _sender: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1))
    _waiters: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(256))
    _count: int = 0

    def one(self) -> None:
        """Send the next request, unless the producer is still sending the last one."""
        if self._sender._work_queue.qsize():  # type: ignore[attr-defined]
            return
        request = QUESTION if self._count % 2 == 0 else CRITICAL
        self._count += 1
        self._sender.submit(self._send, request)

    def _send(self, request: dict[str, Any]) -> None:
        at = time.monotonic()
        try:
            sent = self.send.send(request)
        except Exception as exc:  # the producer's send gave up: it knows, nothing was accepted
            self.refused.append(exc)
            return
        self.sent_at[str(sent.id)] = at
        self._waiters.submit(lambda: self.outcomes.extend(self.send.collect([sent], PATIENCE_S)))

    def wait(self) -> list[Outcome]:
        """Every request's outcome, once each has its answer (or its producer gave up)."""
        self._sender.shutdown(wait=True)
        self._waiters.shutdown(wait=True)
        return self.outcomes


@pytest.fixture(params=["sentinel", "aof-restart"])
def pool_redis(
    request: pytest.FixtureRequest,
    sentinel_set: Callable[..., SentinelSet],
    redis_server: Callable[..., RedisServer],
) -> RedisUnderTest:
    """The pool's Redis in each shape."""
    if request.param == "sentinel":
        return Failover(sentinel_set())
    return Restart(redis_server(appendonly=True))


@pytest.mark.timeout(240)
def test_the_pool_rides_a_lost_redis_under_load_and_nothing_is_restarted_by_hand(
    pool_redis: RedisUnderTest,
    providers: Simulator,
    spawn_worker: Callable[..., Worker],
    producer: Callable[..., Producer],
    ledger: Engine,
    ledger_url: str,
) -> None:
    redis = pool_redis
    scenario = redis.name
    # Given a worker and beat on the pool's Redis, and a producer on it
    empty_ledger(ledger)
    calls_before = {p: providers.calls(p) for p in PROVIDERS}
    worker = spawn_worker(redis.url, concurrency=2, **redis.env, **WORKER_ENV)
    with _beat(worker_env(DATABASE_URL=ledger_url, **redis.env, **WORKER_ENV)):
        load = Load(producer(redis.url, redis.master))
        # When requests arrive steadily, the Redis is lost, and the load goes on until the
        # pool's Redis has been back for a while
        _steadily(load, BEFORE_S)
        redis.lose()
        lost_at = time.monotonic()
        while not redis.back():
            _steadily(load, SEND_EVERY_S)
        back_at = time.monotonic()
        _steadily(load, AFTER_S)
        outcomes = load.wait()
        sent_at = load.sent_at
        statuses = Counter(o.status for o in outcomes)
        # The figures: how long the Redis was away, and when the pool answered again
        since = [o for o in outcomes if sent_at[o.task_id] >= lost_at and o.status == "ok"]
        first = min((o.at for o in since), default=back_at)
        waits = [o.at - sent_at[o.task_id] for o in outcomes if sent_at[o.task_id] >= lost_at]
        answered = sum(o.answered for o in outcomes)
        record_figure(scenario, "Redis lost to Redis back", round(back_at - lost_at, 2), "s")
        record_figure(
            scenario, "Redis back to the first answer sent since", round(first - back_at, 2), "s"
        )
        record_figure(scenario, "longest wait of a request sent since", round(max(waits), 2), "s")
        record_figure(
            scenario,
            "requests answered / sent / refused by the broker",
            f"{answered}/{len(outcomes)}/{len(load.refused)}",
        )
        record_figure(scenario, "answers by status", dict(statuses))
        # Then the producer's every send was taken (it kept trying while the broker was away),
        # and every request is answered: by a provider, or with the chain's end (the static
        # answer) when a hop could not reach its guards
        assert not load.refused, [repr(e) for e in load.refused][:3]
        assert answered == len(outcomes), [repr(o.error) for o in outcomes if o.error][:5]
        assert set(statuses) <= {"ok", "fallback"}, statuses
        # And every request sent once the Redis was back is answered by a provider
        after = Counter(o.status for o in outcomes if sent_at[o.task_id] >= back_at)
        assert set(after) == {"ok"}, after
        # And the worker, never restarted, tried its broker again every second (never Celery's
        # growing 2, 4, 6... s): it took work again within a second of the Redis being back
        assert worker.alive()
        assert set(RETRY_IN.findall(worker.log_path.read_text(errors="replace"))) == {"1.00"}
        # And no attempt called its provider twice: calls made equal the attempts that called
        calls = {p: providers.calls(p) - calls_before[p] for p in PROVIDERS}
        attempts = Counter(
            a["provider"]
            for o in outcomes
            for a in (o.answer or {}).get("attempts", [])
            if a["outcome"] in CALLED_OUTCOMES
        )
        record_figure(scenario, "calls made / attempts that called", f"{calls} / {dict(attempts)}")
        assert calls == {p: attempts[p] for p in PROVIDERS}
        # And beat, still running, drains every attempt into the ledger once: calls, ledger rows
        # and quota counters agree per provider
        ids = [o.task_id for o in outcomes]

        def agreed() -> bool:
            rows = ledger_rows(ledger, ids)
            booked = Counter(r.provider for r in rows if r.outcome in CALLED_OUTCOMES)
            return {p: booked[p] for p in PROVIDERS} == calls and quota_charges(
                redis.client
            ) == ledger_charges(rows)

        started = time.monotonic()
        try:
            eventually(agreed, 60, "calls, ledger rows and quota counters agreeing", interval=0.5)
        finally:
            rows = ledger_rows(ledger, ids)
            record_figure(
                scenario, "end of load to ledger = quota", round(time.monotonic() - started, 1), "s"
            )
            record_figure(scenario, "quota counters", str(quota_charges(redis.client)))
            record_figure(scenario, "ledger", str(ledger_charges(rows)))
    assert all(rows_trail(rows, o.task_id) == trail(o.answer or {}) for o in outcomes)
    assert (dead_letters(redis.client), open_leases(redis.client)) == (0, 0)
    # Finally, nothing is left on the broker to run a second time
    eventually(lambda: not leftover_messages(redis.client), 10, "no message left on the broker")


def _steadily(load: Load, seconds: float) -> None:
    """Send at the load's pace for ``seconds``."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        load.one()
        time.sleep(SEND_EVERY_S)


@contextmanager
def _beat(env: dict[str, str]) -> Iterator[Beat]:
    beat = Beat(env)
    try:
        yield beat
    finally:
        beat.stop()
