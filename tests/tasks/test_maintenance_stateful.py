"""The beat's own tasks under every interleaving hypothesis finds: the money figure and the alerts
stay right at every step.

Rules: calls are made (into Redis, as workers record them) at instants of any day of the month so
far; the drain stores them when it runs, so rows arrive on time or days late, and some arrive while
a roll-up runs (two threads); the clock moves by minutes, to 23:50 (to cross midnight within a few
ticks) or to a month's last evening; a beat tick runs drain, roll-up and budget checks in any order.

Invariants, after every step:

1. the month's (and today's) figure the budget checks and gauges read equals the raw rows' sum;
2. for each alert (rule, provider, threshold, period), the messages the webhook received alternate
   firing, resolved, firing..., and the journal's last state is firing exactly when the
   condition held at the last check (measured on the raw rows, independently of the pool);
3. no calendar alert is still firing, after a check, for a period that ended before that check.

The example count is bounded for CI (``AIPOOL_TEST_MONEY_EXAMPLES``, default 8, and
``AIPOOL_TEST_MONEY_STEPS``, default 30); ``make soak-money`` runs a longer search.
"""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import redis
import time_machine
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import Engine, func, select

import tasks.maintenance as maintenance
from aipool.budget.rules import period_end
from aipool.budget.usage import budget_usage
from aipool.ledger.models import AlertEvent, UsageLogRow
from aipool.ledger.record import UsageRecord
from aipool.ledger.testing import empty_ledger, ledger_engine
from aipool.ledger.usage_log import UsageLog
from aipool.periods import day_range, local_day, month_range
from tests.aipool.budget.conftest import HttpSink
from tests.support.shared_servers import database_named, redis_db
from tests.support.sizes import sized

TAIPEI = ZoneInfo("Asia/Taipei")
BUDGET = Decimal("1")  # AIPOOL_MONTHLY_BUDGET_USD: crossed within a few calls
DAILY_TOKENS = 2_000  # AIPOOL_GEMINI_DAILY_TOKENS
START = datetime(2027, 1, 29, 9, 0, tzinfo=TAIPEI)  # three days before a month end
EXAMPLES = sized(8, 100, "AIPOOL_TEST_MONEY_EXAMPLES")
STEPS = int(os.environ.get("AIPOOL_TEST_MONEY_STEPS", "30"))
TICK_TASKS = ("drain_ledger", "rollup_ledger", "budget_checks")


class Ledger(RuleBasedStateMachine):
    """The pool's money side, driven through the beat's own task functions."""

    engine: Engine
    client: redis.Redis
    sink: HttpSink

    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.calls = 0
        self.usage_log = UsageLog(self.client)
        self.last_check: datetime | None = None
        #: (rule, threshold, period) -> whether the condition held at the last check
        self.truth: dict[tuple[str, str, str], bool] = {}

    # -- set-up ---------------------------------------------------------------------------------

    @initialize()
    def fresh(self) -> None:
        empty_ledger(self.engine)
        self.client.flushdb()
        self.sink.posts.clear()

    # -- rules ----------------------------------------------------------------------------------

    @rule(
        days_back=st.integers(min_value=0, max_value=31),
        minutes_back=st.integers(min_value=0, max_value=600),
        cents=st.integers(min_value=1, max_value=30),
        tokens=st.integers(min_value=10, max_value=900),
    )
    def call_made(self, days_back: int, minutes_back: int, cents: int, tokens: int) -> None:
        """A call of any day of the month so far is recorded (it waits for the drain)."""
        month_start, _ = month_range(local_day(self.now, TAIPEI), TAIPEI)
        at = max(self.now - timedelta(days=days_back, minutes=minutes_back), month_start)
        self.calls += 1
        self.usage_log.record(
            UsageRecord(
                f"call-{self.calls}",
                1,
                "gemini",
                "gemini-2.5-flash",
                "ok",
                True,
                input_tokens=tokens,
                output_tokens=tokens // 2,
                cost_usd=Decimal(cents) / 100,
                created_at=at,
            )
        )

    @rule(minutes=st.sampled_from([1, 4, 5, 9, 15, 60, 180]))
    def minutes_pass(self, minutes: int) -> None:
        self.now += timedelta(minutes=minutes)

    @rule(minute=st.integers(min_value=50, max_value=59))
    def evening_comes(self, minute: int) -> None:
        """To 23:50-23:59 of today, or of tomorrow when that is past."""
        local = self.now.astimezone(TAIPEI)
        target = local.replace(hour=23, minute=minute, second=0, microsecond=0)
        if target <= local:
            target += timedelta(days=1)
        self.now = target

    @rule()
    def month_ends(self) -> None:
        """To 23:55 of the month's last day (or of the next month's, when that is past)."""
        _, end = month_range(local_day(self.now, TAIPEI), TAIPEI)
        target = end - timedelta(minutes=5)
        if target <= self.now:
            _, end = month_range(local_day(end, TAIPEI), TAIPEI)
            target = end - timedelta(minutes=5)
        self.now = target

    @rule(order=st.permutations(TICK_TASKS))
    def beat_ticks(self, order: list[str]) -> None:
        """One beat tick: its tasks in any order."""
        for name in order:
            self._run(name)

    @rule(name=st.sampled_from(TICK_TASKS))
    def one_task_runs(self, name: str) -> None:
        self._run(name)

    @rule()
    def rows_arrive_during_a_roll_up(self) -> None:
        """The drain and the roll-up at the same moment, in two threads."""
        with time_machine.travel(self.now, tick=False):
            threads = [
                threading.Thread(target=maintenance.rollup_ledger.run),
                threading.Thread(target=maintenance.drain_ledger.run),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def figure_is_the_raw_sum(self) -> None:
        usage = budget_usage(self.engine, self.now, TAIPEI, ("gemini",))
        month_cost, month_tokens = self._raw(*month_range(local_day(self.now, TAIPEI), TAIPEI))
        _, day_tokens = self._raw(*day_range(local_day(self.now, TAIPEI), TAIPEI))
        assert usage.month_cost == month_cost
        assert usage.of("gemini").month_tokens == month_tokens
        assert usage.of("gemini").day_tokens == day_tokens

    @invariant()
    def messages_alternate_and_the_last_state_is_the_truth(self) -> None:
        sent: dict[tuple[str, str, str, str], list[str]] = defaultdict(list)
        for _, body in self.sink.posts:
            alert = body["alerts"][0]
            labels = alert["labels"]
            key = (labels["rule"], labels["provider"], labels["threshold"], labels["period"])
            sent[key].append(alert["status"])
        for key, states in sent.items():
            expected = ["firing", "resolved"] * (len(states) // 2 + 1)
            assert states == expected[: len(states)], (key, states)
        journal = self._journal()
        for (rule_name, threshold, period), held in self.truth.items():
            last = journal.get((rule_name, threshold, period))
            assert (last == "firing") == held, (rule_name, threshold, period, last, held)

    @invariant()
    def no_calendar_alert_outlives_its_period(self) -> None:
        if self.last_check is None:
            return
        for (rule_name, threshold, period), last in self._journal().items():
            ended = period_end(rule_name, period, TAIPEI)
            if ended is not None and ended <= self.last_check:
                assert last != "firing", (rule_name, threshold, period)

    # -- helpers --------------------------------------------------------------------------------

    def _run(self, name: str) -> None:
        with time_machine.travel(self.now, tick=False):
            getattr(maintenance, name).run()
        if name == "budget_checks":
            self._note_truth()

    def _note_truth(self) -> None:
        """What each condition is at this check, measured on the raw rows."""
        self.last_check = self.now
        today = local_day(self.now, TAIPEI)
        cost, _ = self._raw(*month_range(today, TAIPEI))
        _, tokens = self._raw(*day_range(today, TAIPEI))
        month, day = today.strftime("%Y-%m"), today.isoformat()
        for percent in (50, 100):
            self.truth[("monthly_cost", f"{percent}%", month)] = cost * 100 >= BUDGET * percent
        for percent in (70, 90):
            self.truth[("daily_tokens", f"{percent}%", day)] = (
                tokens * 100 >= DAILY_TOKENS * percent
            )
        for key in list(self.truth):
            ended = period_end(key[0], key[2], TAIPEI)
            if ended is not None and ended <= self.now:
                self.truth[key] = False

    def _raw(self, start: datetime, end: datetime) -> tuple[Decimal, int]:
        t = UsageLogRow
        with self.engine.connect() as conn:
            cost, tokens = conn.execute(
                select(
                    func.coalesce(func.sum(t.cost_usd), 0),
                    func.coalesce(func.sum(t.input_tokens + t.output_tokens), 0),
                ).where(t.created_at >= start, t.created_at < end)
            ).one()
        return Decimal(cost), int(tokens)

    def _journal(self) -> dict[tuple[str, str, str], str]:
        """The last journaled state of each (rule, threshold, period) of Gemini or the budget."""
        e = AlertEvent
        last: dict[tuple[str, str, str], str] = {}
        with self.engine.connect() as conn:
            for rule_name, threshold, period, state in conn.execute(
                select(e.rule, e.threshold, e.period, e.state)
                .where(e.provider.in_(("gemini", "*")))
                .order_by(e.episode, e.state)  # per episode: firing, then resolved
            ):
                last[(rule_name, threshold, period)] = state
        return last


@pytest.fixture
def wired(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    engine = ledger_engine(database_named("ledger"))
    client = redis.Redis.from_url(redis_db(12))
    sink = HttpSink()
    sink.thread.start()
    for name in ("AIPOOL_ALERTS", "AIPOOL_LIMITS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIPOOL_MONTHLY_BUDGET_USD", str(BUDGET))
    monkeypatch.setenv("AIPOOL_GEMINI_DAILY_TOKENS", str(DAILY_TOKENS))
    monkeypatch.setenv("AIPOOL_ALERT_WEBHOOK_URL", f"{sink.url}/hook")
    monkeypatch.setattr(maintenance, "default_engine", lambda: engine)
    monkeypatch.setattr(maintenance, "_redis", lambda: client)
    Ledger.engine, Ledger.client, Ledger.sink = engine, client, sink
    yield
    sink.server.shutdown()
    sink.server.server_close()
    client.flushdb()
    client.close()
    empty_ledger(engine)
    engine.dispose()


def test_the_money_figure_and_the_alerts_stay_right_under_any_interleaving(wired: None) -> None:
    started = time.perf_counter()
    run_state_machine_as_test(
        Ledger,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    print(f"{EXAMPLES} examples of up to {STEPS} steps in {time.perf_counter() - started:.1f} s")
