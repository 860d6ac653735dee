"""Breaker alerts through a real worker (which also serves the maintenance queue) and the ledger:
an outage whose breaker state Redis lost never silences the next one."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from sqlalchemy import Engine, delete, select

from aipool.breaker import breakers_for
from aipool.ledger.db import make_engine
from aipool.ledger.models import AlertEvent
from tasks.client import submit
from tests.conftest import TEST_DATABASE_URL

pytestmark = pytest.mark.integration
TIMEOUT = 30
QUESTION = {"prompt": "What is a pod?"}


@pytest.fixture
def journal(pool, ledger_url: str) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    """The ledger the pool's worker journals alerts in, without breaker alerts of earlier tests."""
    engine = make_engine(TEST_DATABASE_URL)
    with engine.begin() as conn:
        conn.execute(delete(AlertEvent).where(AlertEvent.rule == "breaker_open"))
    yield engine
    engine.dispose()


def _ollama_alerts(engine: Engine) -> list[tuple[str, str]]:
    query = (
        select(AlertEvent.period, AlertEvent.state)
        .where(AlertEvent.rule == "breaker_open", AlertEvent.provider == "ollama")
        .order_by(AlertEvent.id)
    )
    with engine.connect() as conn:
        return [(row.period, row.state) for row in conn.execute(query)]


def _until(engine: Engine, count: int) -> list[tuple[str, str]]:
    deadline = time.monotonic() + TIMEOUT
    while len(alerts := _ollama_alerts(engine)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return alerts


def _outage(healthy) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "error_500")
    for _ in range(3):
        submit(QUESTION).get(timeout=TIMEOUT)


def test_after_redis_lost_an_open_breaker_the_next_outage_pages_and_its_end_resolves_it(
    healthy, clean_redis: redis.Redis, journal: Engine
) -> None:  # type: ignore[no-untyped-def]
    # Given: Ollama down, its breaker opened by three failures, the alert journaled
    _outage(healthy)
    ((first, state),) = _until(journal, 1)
    assert state == "firing"
    # And: Redis loses the pool's state (the breaker comes back closed, with no transition)
    for key in clean_redis.scan_iter("aipool:*"):
        clean_redis.delete(key)
    # And: Ollama answers again
    healthy.heal("ollama")
    assert submit(QUESTION).get(timeout=TIMEOUT)["provider"] == "ollama"
    # When: Ollama goes down again
    _outage(healthy)
    alerts = _until(journal, 3)
    # Then: the forgotten outage's alert ended, and the new outage paged
    assert alerts[0] == (first, "firing") and (first, "resolved") in alerts
    (second,) = {period for period, state in alerts if state == "firing"} - {first}
    # When: Ollama heals, and a trial call after the recovery window (2 s here) closes the breaker
    healthy.heal("ollama")
    time.sleep(2.2)
    assert submit(QUESTION).get(timeout=TIMEOUT)["provider"] == "ollama"
    assert breakers_for(clean_redis)["ollama"].snapshot()["state"] == "closed"
    # Then: the resolution is the new outage's
    assert sorted(_until(journal, 4)) == sorted(
        [(first, "firing"), (first, "resolved"), (second, "firing"), (second, "resolved")]
    )
