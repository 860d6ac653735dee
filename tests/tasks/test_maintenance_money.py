"""Issue #27's scenarios with the beat's own tasks, a real webhook receiver, real PostgreSQL and
Redis, and the clock moved by time-machine: late rows reach the month and its alert, midnight
sends no false "recovered", and a day's alert ends with the day."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import redis
import time_machine
from sqlalchemy import Engine, select

import tasks.maintenance as maintenance
from aipool.budget.usage import budget_usage
from aipool.ledger.models import MonthlyUsage
from aipool.ledger.record import UsageRecord
from aipool.ledger.testing import empty_ledger, ledger_engine
from aipool.ledger.usage_log import UsageLog
from tests.aipool.budget.conftest import HttpSink
from tests.support.shared_servers import database_named, redis_db

TAIPEI = ZoneInfo("Asia/Taipei")


@pytest.fixture(scope="module")
def _engine() -> Iterator[Engine]:
    engine = ledger_engine(database_named("ledger"))
    yield engine
    engine.dispose()


@pytest.fixture
def sink() -> Iterator[HttpSink]:
    with HttpSink() as server:
        yield server


@pytest.fixture
def beat(
    _engine: Engine, sink: HttpSink, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Engine, redis.Redis]]:
    """The beat's tasks on the test database and Redis db 12, alerts to the webhook sink."""
    client = redis.Redis.from_url(redis_db(12))
    client.flushdb()
    empty_ledger(_engine)
    for name in ("AIPOOL_MONTHLY_BUDGET_USD", "AIPOOL_ALERTS", "AIPOOL_LIMITS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIPOOL_ALERT_WEBHOOK_URL", f"{sink.url}/hook")
    monkeypatch.setenv("AIPOOL_GEMINI_DAILY_TOKENS", "100000")
    monkeypatch.setattr(maintenance, "default_engine", lambda: _engine)
    monkeypatch.setattr(maintenance, "_redis", lambda: client)
    yield _engine, client
    client.flushdb()
    client.close()


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2027, 3, day, hour, minute, tzinfo=TAIPEI)


class Calls:
    """Usage records as workers write them: into Redis, for the beat's drain to store."""

    def __init__(self, client: redis.Redis) -> None:
        self.log = UsageLog(client)
        self.n = 0

    def made(self, at: datetime, cost: str, tokens: int = 100, times: int = 1) -> None:
        for _ in range(times):
            self.n += 1
            self.log.record(
                UsageRecord(
                    f"call-{self.n}",
                    1,
                    "gemini",
                    "gemini-2.5-flash",
                    "ok",
                    True,
                    input_tokens=tokens,
                    cost_usd=Decimal(cost),
                    created_at=at,
                )
            )


def _tick(at: datetime, *tasks: str) -> list[Any]:
    """One beat tick at ``at``: the named tasks, in the order given."""
    with time_machine.travel(at, tick=False):
        return [getattr(maintenance, name).run() for name in tasks]


def _hooks(sink: HttpSink, rule: str) -> list[dict[str, Any]]:
    return [
        body["alerts"][0]
        for body in sink.bodies("/hook")
        if body["alerts"][0]["labels"]["rule"] == rule
    ]


def test_calls_of_the_5th_stored_on_the_9th_reach_the_month_and_its_alert(
    beat: tuple[Engine, redis.Redis], sink: HttpSink
) -> None:
    # Given: $2.00 of Gemini on the 3rd, stored on time
    engine, client = beat
    calls = Calls(client)
    calls.made(_at(3, 10), "2.00")
    _tick(_at(3, 10, 5), "drain_ledger", "rollup_ledger", "budget_checks")
    # When: $3.60 of calls made on the 5th wait in Redis (the database is down) until the 9th,
    # while beat rolls up and checks every day
    calls.made(_at(5, 10), "0.90", times=4)
    for day in range(5, 9):
        _tick(_at(day, 23, 55), "rollup_ledger", "budget_checks")
    assert _hooks(sink, "monthly_cost") == []
    _tick(_at(9, 10), "drain_ledger", "budget_checks", "rollup_ledger")
    # Then: the 50% alert fired once at $5.60, and the month's roll-up holds $5.60
    (fired,) = _hooks(sink, "monthly_cost")
    assert fired["status"] == "firing" and fired["labels"]["threshold"] == "50%"
    assert "$5.60" in fired["annotations"]["description"]
    with engine.connect() as conn:
        assert conn.execute(select(MonthlyUsage.cost_usd)).scalar_one() == Decimal("5.60")
    assert budget_usage(engine, _at(9, 10), TAIPEI).month_cost == Decimal("5.60")


def test_the_last_rows_of_a_day_drained_after_its_roll_up_send_no_false_recovery(
    beat: tuple[Engine, redis.Redis], sink: HttpSink
) -> None:
    # Given: $4.95 of the 3rd, drained and rolled up
    _, client = beat
    calls = Calls(client)
    calls.made(_at(3, 20), "4.95")
    _tick(_at(3, 20, 5), "drain_ledger", "rollup_ledger", "budget_checks")
    # When: at 23:55 the roll-up runs, then $0.10 is drained, then the check fires at $5.05
    calls.made(_at(3, 23, 50), "0.10")
    _tick(_at(3, 23, 55), "rollup_ledger", "drain_ledger", "budget_checks")
    # ...and at 00:00 the check runs before any roll-up, at 00:10 after one
    _tick(_at(4, 0, 0), "budget_checks")
    _tick(_at(4, 0, 10), "rollup_ledger", "budget_checks")
    # Then: one firing, no "resolved": spend stayed over the line
    assert [a["status"] for a in _hooks(sink, "monthly_cost")] == ["firing"]


def test_a_days_alert_ends_with_its_day_in_one_message_with_that_end(
    beat: tuple[Engine, redis.Redis], sink: HttpSink
) -> None:
    # Given: Gemini's daily tokens at 91% on 2027-03-03
    _, client = beat
    Calls(client).made(_at(3, 10), "0.01", tokens=91_000)
    _tick(_at(3, 10, 5), "drain_ledger", "rollup_ledger", "budget_checks")
    # When: the next day's first ticks run
    _tick(_at(4, 0, 5), "rollup_ledger", "budget_checks")
    _tick(_at(4, 0, 10), "rollup_ledger", "budget_checks")
    # Then: firing, then one resolution whose endsAt is the day's end (never 0001-01-01)
    alerts = [a for a in _hooks(sink, "daily_tokens") if a["labels"]["threshold"] == "90%"]
    assert [a["status"] for a in alerts] == ["firing", "resolved"]
    ended = alerts[1]
    assert ended["endsAt"] == "2027-03-03T16:00:00+00:00"  # 2027-03-04 00:00 in Taipei
    assert ended["startsAt"] == "2027-03-03T02:05:00+00:00"  # when it fired
    assert all(
        a["endsAt"] != "0001-01-01T00:00:00Z"
        for a in _hooks(sink, "daily_tokens")
        if a["status"] == "resolved"
    )
