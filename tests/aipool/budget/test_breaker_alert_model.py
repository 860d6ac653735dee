"""Breaker alerts under every interleaving hypothesis finds, Redis losing its data included.

Two workers share Ollama's breaker on the real Redis; every transition one of them causes is a
message for the maintenance queue, delivered in order by one of two maintenance processes whose
clocks disagree, and any message may be delivered again (a redelivery). Rules: calls fail (one to
three in a row) or one answers, time passes, Redis loses its data (a restart without persistence,
a FLUSHALL), a message is delivered, one already delivered comes again, beat reconciles the alerts
with the breakers.

Invariants:

1. at most one breaker alert is open, and each alert sends at most one firing and one resolved;
2. once every message sent so far is delivered: every outage (each CLOSED -> OPEN of the breaker)
   paged exactly once, in order, named by when it began; every outage but the latest was resolved
   (by its own end, or, when Redis lost it, by the next opening or beat), the latest only if it
   closed or Redis lost it, and surely after beat ran once Redis lost it.

The example count is bounded for CI (``AIPOOL_TEST_BREAKER_ALERT_EXAMPLES``); ``make soak`` runs
a longer search.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from sqlalchemy import Engine

import aipool.budget.checks as checks
from aipool.breaker import Breaker, BreakerState, BreakerTransition
from aipool.budget.checks import (
    breaker_episode,
    notify_breaker_closed,
    notify_breaker_opened,
    reconcile_breaker_alerts,
)
from aipool.budget.events import open_episodes
from aipool.errors import CircuitOpen
from aipool.ledger.testing import empty_ledger
from aipool.notify import Notification
from aipool.settings.provider_limits import BreakerSettings
from tests.support.guards import GUARDS_REDIS_URL
from tests.support.sizes import sized

OLLAMA = BreakerSettings(failure_threshold=3, recovery_timeout=30.0, half_open_max_calls=2)
EXAMPLES = sized(15, 200, "AIPOOL_TEST_BREAKER_ALERT_EXAMPLES")
#: How far each maintenance process's clock is from the true time (seconds).
MAINTENANCE_SKEW = (0.0, -3_600.0)


class BreakerAlerts(RuleBasedStateMachine):
    engine: Engine
    client: redis.Redis

    def __init__(self) -> None:
        super().__init__()
        self.client.flushdb()
        empty_ledger(self.engine)
        self.sent: list[Notification] = []
        checks.notifiers_from_env = lambda: [self]  # type: ignore[assignment]
        self.now = 1_764_000_000.0  # Redis's clock: the scripts stamp transitions on it
        self.workers = [
            Breaker(self.client, "ollama", OLLAMA, self._clock, [self._heard]) for _ in range(2)
        ]
        self.queue: list[BreakerTransition] = []
        self.delivered: list[BreakerTransition] = []
        #: The model: when each outage began, and those that ended with a closing transition.
        self.outages: list[float] = []
        self.closed: set[float] = set()
        #: Outages going on when Redis lost its data: the breaker never reports their end.
        self.forgotten: set[float] = set()

    name = "model"

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)

    def _clock(self) -> float:
        return self.now

    def _heard(self, event: BreakerTransition) -> None:
        self.queue.append(event)
        if event.old is BreakerState.CLOSED and event.new is BreakerState.OPEN:
            assert event.tripped_at is not None
            self.outages.append(event.tripped_at)
        elif event.new is BreakerState.CLOSED:
            assert event.tripped_at == self.outages[-1]
            self.closed.add(event.tripped_at)

    def teardown(self) -> None:
        self.client.flushdb()

    @rule(worker=st.integers(0, 1), times=st.integers(1, 3))
    def calls_fail(self, worker: int, times: int) -> None:
        """Calls in a row that count against the provider (it is down)."""
        for _ in range(times):
            self._call(worker, fails=True)

    @rule(worker=st.integers(0, 1))
    def a_call_answers(self, worker: int) -> None:
        self._call(worker, fails=False)

    def _call(self, worker: int, *, fails: bool) -> None:
        # A call takes time: no two calls end at the same instant of Redis's clock (TIME, to the
        # microsecond), so no two openings are stamped alike.
        self.now += 0.25
        breaker = self.workers[worker]
        try:
            permit = breaker.acquire()
        except CircuitOpen:
            return
        if fails:
            breaker.record_failure(permit)
        else:
            breaker.record_success(permit)

    @rule(seconds=st.sampled_from([1.0, 31.0, 600.0]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def redis_loses_its_data(self) -> None:
        """A restart without persistence, or a FLUSHALL: the breaker is closed again, and no
        transition says so."""
        if self.outages and self.outages[-1] not in self.closed:
            self.forgotten.add(self.outages[-1])
        self.client.flushdb()

    @rule()
    def beat_runs(self) -> None:
        reconcile_breaker_alerts(self.client)
        if not self.queue and self.outages and self.outages[-1] in self.forgotten:
            assert breaker_episode(self.outages[-1]) in self._resolved()

    @rule(process=st.integers(0, 1))
    def deliver(self, process: int) -> None:
        if self.queue:
            event = self.queue.pop(0)
            self._deliver(event, process)
            self.delivered.append(event)

    @rule(process=st.integers(0, 1), data=st.data())
    def redeliver(self, process: int, data: Any) -> None:
        if self.delivered:
            self._deliver(data.draw(st.sampled_from(self.delivered)), process)

    def _deliver(self, event: BreakerTransition, process: int) -> None:
        """What ``aipool.breaker_transition`` does, on a maintenance process's own clock."""
        now = datetime.fromtimestamp(self.now + MAINTENANCE_SKEW[process], UTC)
        old, new = event.old, event.new
        if new is BreakerState.OPEN and old is not BreakerState.OPEN:
            notify_breaker_opened("ollama", tripped_at=event.tripped_at, now=now)
        elif new is BreakerState.CLOSED and old is not BreakerState.CLOSED:
            notify_breaker_closed("ollama", tripped_at=event.tripped_at, now=now)

    @invariant()
    def at_most_one_alert_open_and_each_alternates(self) -> None:
        assert len(open_episodes(self.engine, ("breaker_open",))) <= 1
        for period, count in Counter((n.labels["period"], n.status) for n in self.sent).items():
            assert count == 1, (period, count)

    @invariant()
    def every_outage_paged_once_and_every_ended_one_resolved_once(self) -> None:
        if self.queue:
            return
        fired = [n.labels["period"] for n in self.sent if n.status == "firing"]
        resolved = self._resolved()
        ended = {breaker_episode(t) for t in self.outages[:-1] + sorted(self.closed)}
        forgotten = {breaker_episode(t) for t in self.forgotten}
        assert len(fired) == len(self.outages)
        assert fired == [breaker_episode(t) for t in self.outages]
        assert ended <= resolved <= ended | forgotten

    def _resolved(self) -> set[str]:
        return {n.labels["period"] for n in self.sent if n.status == "resolved"}


@pytest.fixture
def wired(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("AIPOOL_ALERTS", raising=False)
    monkeypatch.setattr(checks, "default_engine", lambda: engine)
    # Each example points the channels at itself; monkeypatch puts the real ones back.
    monkeypatch.setattr(checks, "notifiers_from_env", checks.notifiers_from_env)
    client = redis.Redis.from_url(GUARDS_REDIS_URL)
    BreakerAlerts.engine, BreakerAlerts.client = engine, client
    yield
    client.flushdb()
    client.close()


def test_every_outage_pages_once_and_ends_once_whatever_redis_forgets(wired: None) -> None:
    started = time.perf_counter()
    run_state_machine_as_test(
        BreakerAlerts,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=40,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    print(f"{EXAMPLES} examples in {time.perf_counter() - started:.1f} s")
