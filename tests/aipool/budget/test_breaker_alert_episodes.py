"""Breaker alerts through the whole path, on the real Redis and the ledger database: a breaker on
Redis, its transitions handed to the maintenance task as a worker sends them, the alert journal.

One alert per outage (its firing when the breaker opens, its resolution when it closes), and an
outage whose state Redis lost (a restart without persistence, a FLUSHALL) never silences the next
one: the next opening ends the forgotten alert and pages on its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from sqlalchemy import Engine, select

import aipool.budget.checks as checks
import workers.runtime as runtime
from aipool.breaker import Breaker
from aipool.budget import reconcile_breaker_alerts
from aipool.ledger.models import AlertEvent
from aipool.notify import Notification
from aipool.settings.provider_limits import BreakerSettings
from tasks.maintenance import breaker_transition
from tests.support.guards import Clock, real_redis
from workers.runtime import TRIPPED_AT_HEADER

__all__ = ["real_redis"]

#: ADR-006's Ollama breaker: three consecutive failures open it.
OLLAMA = BreakerSettings(failure_threshold=3, recovery_timeout=30.0, half_open_max_calls=3)


class Sink:
    """The pool's channels: every notification sent, in order."""

    name = "sink"

    def __init__(self) -> None:
        self.sent: list[Notification] = []

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)

    def statuses(self) -> list[tuple[str, str]]:
        return [(n.status, n.labels["period"]) for n in self.sent]


class MaintenanceQueue:
    """The maintenance queue: what workers send (``runtime.alert_on_transition``), delivered to
    ``aipool.breaker_transition`` when the test says so."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[Any], dict[str, Any] | None]] = []

    def send_task(
        self, name: str, args: list[Any], queue: str, headers: dict[str, Any] | None = None
    ) -> None:
        assert (name, queue) == ("aipool.breaker_transition", "maintenance")
        # Three arguments, as the maintenance worker of the earlier release takes them; the
        # outage rides in a header
        assert len(args) == 3
        self.messages.append((args, headers))

    def deliver(self, *messages: tuple[list[Any], dict[str, Any] | None]) -> None:
        for args, headers in messages:
            breaker_transition.apply(args=args, headers=headers, throw=True)

    def deliver_all(self) -> list[tuple[list[Any], dict[str, Any] | None]]:
        taken, self.messages = self.messages, []
        self.deliver(*taken)
        return taken


@pytest.fixture
def wired(
    engine: Engine, real_redis: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Breaker, Clock, MaintenanceQueue, Sink]]:
    monkeypatch.delenv("AIPOOL_ALERTS", raising=False)
    sink, queue, clock = Sink(), MaintenanceQueue(), Clock()
    monkeypatch.setattr(checks, "default_engine", lambda: engine)
    monkeypatch.setattr(checks, "notifiers_from_env", lambda: [sink])
    monkeypatch.setattr(runtime, "_maintenance_app", queue)
    breaker = Breaker(real_redis, "ollama", OLLAMA, clock, [runtime.alert_on_transition])
    yield breaker, clock, queue, sink


def _fail(breaker: Breaker, times: int) -> None:
    for _ in range(times):
        breaker.record_failure(breaker.acquire())


def _alerted(breaker: Breaker, clock: Clock, queue: MaintenanceQueue) -> float:
    """Ollama goes down: three failures open its breaker, and the alert is delivered. Returns when
    the outage began."""
    began = clock.now
    _fail(breaker, 3)
    queue.deliver_all()
    return began


def _heal(breaker: Breaker, clock: Clock) -> None:
    """Past the recovery window, a trial call succeeds: the breaker closes."""
    clock.advance(OLLAMA.recovery_timeout + 1)
    breaker.record_success(breaker.acquire())
    assert breaker.snapshot()["state"] == "closed"


def _period(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _journal(engine: Engine) -> list[tuple[str, str, int, str]]:
    e = AlertEvent
    query = select(e.rule, e.period, e.episode, e.state).order_by(e.id)
    with engine.connect() as conn:
        return [(r.rule, r.period, r.episode, r.state) for r in conn.execute(query)]


def test_given_redis_lost_an_open_breaker_when_it_opens_again_then_the_new_outage_pages(
    wired: tuple[Breaker, Clock, MaintenanceQueue, Sink], real_redis: redis.Redis, engine: Engine
) -> None:
    breaker, clock, queue, sink = wired
    # Given: Ollama down, three failures open its breaker, and the alert fires
    first = _alerted(breaker, clock, queue)
    assert [n.status for n in sink.sent] == ["firing"]
    assert sink.sent[0].summary == "Ollama 服務可能已離線"
    # And: Redis loses its data: the breaker is closed again, and no transition says so
    real_redis.flushdb()
    assert breaker.snapshot()["state"] == "closed"
    # And: Ollama answers again
    clock.advance(120)
    breaker.record_success(breaker.acquire())
    assert queue.deliver_all() == []
    # When: Ollama goes down again
    clock.advance(300)
    second = _alerted(breaker, clock, queue)
    # Then: the forgotten outage's alert ends, and the new outage pages
    assert [n.status for n in sink.sent] == ["firing", "resolved", "firing"]
    assert sink.sent[2].summary == "Ollama 服務可能已離線"
    assert "Redis" in sink.sent[1].description
    # When: Ollama heals and a trial call closes the breaker
    _heal(breaker, clock)
    queue.deliver_all()
    # Then: the resolution is the new outage's, and each alert names its own outage
    assert [n.status for n in sink.sent] == ["firing", "resolved", "firing", "resolved"]
    assert sink.statuses() == [
        ("firing", _period(first)),
        ("resolved", _period(first)),
        ("firing", _period(second)),
        ("resolved", _period(second)),
    ]
    assert _journal(engine) == [
        ("breaker_open", _period(first), 1, "firing"),
        ("breaker_open", _period(first), 1, "resolved"),
        ("breaker_open", _period(second), 1, "firing"),
        ("breaker_open", _period(second), 1, "resolved"),
    ]


def test_given_one_outage_when_it_reopens_and_its_messages_come_twice_then_one_page_one_end(
    wired: tuple[Breaker, Clock, MaintenanceQueue, Sink],
) -> None:
    breaker, clock, queue, sink = wired
    # Given: an outage, whose trial call fails once (a reopening) before one succeeds
    began = clock.now
    _fail(breaker, 3)
    clock.advance(OLLAMA.recovery_timeout + 1)
    _fail(breaker, 1)
    assert breaker.snapshot()["state"] == "open"
    _heal(breaker, clock)
    # When: every message is delivered twice (a redelivery, or a second maintenance process)
    messages = queue.deliver_all()
    queue.deliver(*messages)
    # Then: its opening, reopening and closing all name the outage (half-open steps alert not)
    alerting = [(args[1:], headers) for args, headers in messages if args[2] != "half_open"]
    named = {TRIPPED_AT_HEADER: began}
    assert alerting == [
        (["closed", "open"], named),
        (["half_open", "open"], named),
        (["half_open", "closed"], named),
    ]
    # And the outage paged once and ended once
    assert sink.statuses() == [("firing", _period(began)), ("resolved", _period(began))]


def test_given_an_earlier_outages_messages_late_when_delivered_then_the_later_one_stays_open(
    wired: tuple[Breaker, Clock, MaintenanceQueue, Sink],
) -> None:
    breaker, clock, queue, sink = wired
    # Given: an outage that ended, and a later one
    _fail(breaker, 3)
    _heal(breaker, clock)
    clock.advance(60)
    second = clock.now
    _fail(breaker, 3)
    opened_first, closed_first, opened_second = [
        m for m in queue.messages if m[0][2] != "half_open"
    ]
    queue.messages = []
    # When: the later opening is delivered first, then the earlier outage's messages
    queue.deliver(opened_second, opened_first, closed_first)
    # Then: the later outage pages and stays open; the earlier one, over, pages no more
    assert sink.statuses() == [("firing", _period(second))]
    # When: the later outage ends
    _heal(breaker, clock)
    queue.deliver_all()
    # Then: its alert resolves
    assert sink.statuses()[1:] == [("resolved", _period(second))]


def test_given_a_message_of_an_earlier_release_when_delivered_then_one_episode_at_a_time(
    wired: tuple[Breaker, Clock, MaintenanceQueue, Sink],
) -> None:
    _, _, queue, sink = wired
    # Given: messages without the outage's header, as workers of the earlier release send them
    queue.deliver((["ollama", "closed", "open"], None), (["ollama", "half_open", "open"], None))
    queue.deliver(
        (["ollama", "half_open", "closed"], None), (["ollama", "half_open", "closed"], None)
    )
    # Then: one firing, one resolution, as before
    assert [status for status, _ in sink.statuses()] == ["firing", "resolved"]


def test_given_redis_lost_an_open_breaker_when_beat_runs_then_its_alert_ends_and_the_next_pages(
    wired: tuple[Breaker, Clock, MaintenanceQueue, Sink], real_redis: redis.Redis
) -> None:
    breaker, clock, queue, sink = wired
    # Given: an outage alerted; beat's reconciliation finds it going on
    first = _alerted(breaker, clock, queue)
    assert reconcile_breaker_alerts(real_redis) == []
    # When: Redis loses its data, Ollama heals, and beat runs
    real_redis.flushdb()
    breaker.record_success(breaker.acquire())
    reconciled = reconcile_breaker_alerts(real_redis)
    # Then: the forgotten outage's alert ends, saying why
    assert [(s.state, s.provider) for s in reconciled] == [("resolved", "ollama")]
    assert sink.statuses() == [("firing", _period(first)), ("resolved", _period(first))]
    assert "Redis" in sink.sent[1].description
    assert reconcile_breaker_alerts(real_redis) == []
    # When: Ollama goes down again
    clock.advance(300)
    second = _alerted(breaker, clock, queue)
    # Then: it pages, with nothing more to resolve
    assert sink.statuses()[2:] == [("firing", _period(second))]


def test_given_a_closing_message_lost_when_beat_runs_then_the_alert_resolves_once(
    wired: tuple[Breaker, Clock, MaintenanceQueue, Sink], real_redis: redis.Redis
) -> None:
    breaker, clock, queue, sink = wired
    # Given: an outage alerted, then closed, its closing message not delivered yet
    began = _alerted(breaker, clock, queue)
    _heal(breaker, clock)
    # When: beat runs, and then the closing message comes
    reconcile_breaker_alerts(real_redis)
    queue.deliver_all()
    # Then: one resolution, as the closing says it
    assert sink.statuses() == [("firing", _period(began)), ("resolved", _period(began))]
    assert sink.sent[1].summary == "已恢復：Ollama 服務可能已離線"
    assert "Redis" not in sink.sent[1].description
