"""The pool's shared state as Prometheus gauges: breakers, quotas, queues and ledger budgets."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import fakeredis
import pytest
import redis
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from aipool.breaker import Breaker
from aipool.budget import rules
from aipool.budget.usage import budget_usage
from aipool.ledger.db import make_engine, migrate
from aipool.ledger.models import usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.rollup import rollup_day
from aipool.ledger.usage_log import _row
from aipool.metrics.pool_state import PoolState, WorkerQueues, broker_queue_depths, state_redis
from aipool.quota import Quota
from aipool.settings.provider_limits import ADR_LIMITS as DEFAULTS

TAIPEI = ZoneInfo("Asia/Taipei")
NOW = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Engine]:
    url = f"sqlite:///{tmp_path}/ledger.db"
    migrate(url)
    engine = make_engine(url)
    yield engine
    engine.dispose()


def _use(engine: Engine, provider: str, tokens: int, at: datetime, n: int = 1, **kw: Any) -> None:
    rows = [
        _row(
            UsageRecord(
                uuid.uuid4().hex,
                0,
                provider,
                "m",
                kw.get("outcome", "ok"),
                kw.get("outcome", "ok") == "ok",
                input_tokens=tokens,
                cost_usd=kw.get("cost", Decimal(0)),
                created_at=at,
            )
        )
        for _ in range(n)
    ]
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), rows)


def _state(client: Any, engine: Engine, depths: dict[str, int] | None = None) -> PoolState:
    return PoolState(
        redis=lambda: client,
        engine=lambda: engine,
        queue_depths=lambda: depths or {"router": 0, "ollama": 3},
        limits=DEFAULTS,
        monthly_budget_usd=lambda: Decimal(10),
        zone=TAIPEI,
        clock=NOW.timestamp,
    )


def _registry(*collectors: Any) -> CollectorRegistry:
    registry = CollectorRegistry()
    for collector in collectors:
        registry.register(collector)
    return registry


def test_given_breakers_quotas_and_queues_when_scraped_then_each_is_a_gauge(
    ledger: Engine,
) -> None:
    # Given: Ollama's breaker opened by three failures, two Gemini calls this minute
    client = fakeredis.FakeRedis()
    ollama = Breaker(client, "ollama", DEFAULTS["ollama"].breaker, NOW.timestamp)
    for _ in range(3):
        ollama.record_failure(ollama.acquire())
    gemini = Quota(client, "gemini", DEFAULTS["gemini"].quota, NOW.timestamp, TAIPEI)
    for attempt in range(2):
        gemini.settle(gemini.reserve("r", attempt, 100), 120)
    # When
    registry = _registry(_state(client, ledger))
    value = registry.get_sample_value
    # Then: the breaker's state is one-hot, the quota's windows carry used and limit
    assert value("aipool_breaker_state", {"provider": "ollama", "state": "open"}) == 1
    assert value("aipool_breaker_state", {"provider": "ollama", "state": "closed"}) == 0
    assert value("aipool_breaker_state", {"provider": "gemini", "state": "closed"}) == 1
    assert value("aipool_breaker_consecutive_failures", {"provider": "ollama"}) == 3
    assert value("aipool_provider_paused_seconds", {"provider": "gemini"}) == 0
    assert value("aipool_quota_used", {"provider": "gemini", "quota": "rpm"}) == 2
    assert value("aipool_quota_limit", {"provider": "gemini", "quota": "rpm"}) == 10
    assert value("aipool_quota_used", {"provider": "gemini", "quota": "daily_tokens"}) == 240
    assert value("aipool_quota_limit", {"provider": "claude", "quota": "monthly_tokens"}) == 500_000
    # an unlimited provider is not counted by the guard
    assert value("aipool_quota_used", {"provider": "ollama", "quota": "rpm"}) is None
    assert value("aipool_queue_depth", {"queue": "ollama"}) == 3
    assert value("aipool_ledger_pending_records") == 0
    for source in ("redis", "broker", "ledger"):
        assert value("aipool_state_up", {"source": source}) == 1


def test_given_ledger_rows_when_scraped_then_the_budget_gauges_are_what_beat_checks(
    ledger: Engine,
) -> None:
    # Given: Gemini used 40,000 tokens on an earlier (rolled-up) day and 71,000 today in 350
    # calls, and 20 hops skipped it today; Claude cost $2 earlier and $3.50 today
    earlier = NOW - timedelta(days=3)
    _use(ledger, "gemini", 40_000, earlier)
    _use(ledger, "claude", 1_000, earlier, cost=Decimal("2.00"))
    rollup_day(ledger, earlier.date(), TAIPEI)
    _use(ledger, "gemini", 200, NOW, 350)
    _use(ledger, "gemini", 1_000, NOW, 1)
    _use(ledger, "gemini", 0, NOW, 20, outcome="circuit_open")
    _use(ledger, "claude", 2_000, NOW, cost=Decimal("3.50"))
    # When
    value = _registry(_state(fakeredis.FakeRedis(), ledger)).get_sample_value
    # Then: the calendar figures, per provider and quota
    gemini = {"provider": "gemini"}
    assert value("aipool_budget_used", {**gemini, "quota": "daily_tokens"}) == 71_000
    assert value("aipool_budget_used", {**gemini, "quota": "daily_requests"}) == 351
    assert value("aipool_budget_used", {**gemini, "quota": "monthly_tokens"}) == 111_000
    assert value("aipool_budget_limit", {**gemini, "quota": "daily_tokens"}) == 100_000
    assert value("aipool_budget_limit", {"provider": "ollama", "quota": "daily_tokens"}) is None
    assert value("aipool_budget_used", {"provider": "ollama", "quota": "daily_tokens"}) == 0
    assert value("aipool_budget_cost_usd", {"provider": "claude", "period": "day"}) == 3.5
    assert value("aipool_budget_cost_usd", {"provider": "claude", "period": "month"}) == 5.5
    assert value("aipool_budget_monthly_usd") == 10
    # and every threshold the gauges cross (as the Prometheus rules compare them) is a condition
    # beat's checks hold, and no other
    usage = budget_usage(ledger, NOW, TAIPEI)
    quotas = {p: pl.quota for p, pl in DEFAULTS.items()}
    holding = {
        (c.rule, c.provider, c.threshold)
        for c in rules.quota_conditions(usage, quotas, "2026-03-14", "2026-03")
        if c.holds
    }
    crossed = set()
    for provider in DEFAULTS:
        for quota in ("daily_tokens", "daily_requests", "monthly_tokens"):
            labels = {"provider": provider, "quota": quota}
            limit = value("aipool_budget_limit", labels)
            for percent, _ in rules.QUOTA_THRESHOLDS:
                if limit and value("aipool_budget_used", labels) / limit >= percent / 100:
                    crossed.add((quota, provider, f"{percent}%"))
    assert (
        crossed
        == holding
        == {("daily_tokens", "gemini", "70%"), ("daily_requests", "gemini", "70%")}
    )
    month = rules.monthly_cost_condition(usage.month_cost, Decimal(10), "2026-03")
    cost = sum(
        value("aipool_budget_cost_usd", {"provider": p, "period": "month"}) or 0 for p in DEFAULTS
    )
    assert month.holds is (cost / 10 >= 0.5) is True


def test_given_redis_unreachable_when_scraped_then_it_reports_so_and_serves_the_rest(
    ledger: Engine,
) -> None:
    # Given: the scrape's client, of a port nobody listens on
    down = state_redis("redis://127.0.0.1:1/0")
    # When
    value = _registry(_state(down, ledger)).get_sample_value
    # Then
    assert value("aipool_state_up", {"source": "redis"}) == 0
    assert value("aipool_breaker_state", {"provider": "ollama", "state": "closed"}) is None
    assert value("aipool_state_up", {"source": "ledger"}) == 1
    assert value("aipool_budget_monthly_usd") == 10


def test_given_a_broker_that_does_not_answer_when_scraped_then_the_scrape_still_returns(
    ledger: Engine,
) -> None:
    # Given: queue depths that do not come until the test lets them, and three seconds to wait
    # (the ledger's read must fit in them: half a second did not on CI's loaded cores)
    release, returned = threading.Event(), threading.Event()

    def stuck() -> dict[str, int]:
        release.wait(30)
        returned.set()
        return {}

    state = _state(fakeredis.FakeRedis(), ledger)
    state.queue_depths, state.timeout_s = stuck, 3.0
    # When
    try:
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in state.collect()
            for s in family.samples
        }
        # Then: the scrape came back while the broker read was still waiting
        assert not returned.is_set()
    finally:
        release.set()
    # and says the broker was unreadable, serving the other sources
    assert samples[("aipool_state_up", (("source", "broker"),))] == 0
    assert samples[("aipool_state_up", (("source", "redis"),))] == 1
    assert samples[("aipool_budget_monthly_usd", ())] == 10
    assert not [key for key in samples if key[0] == "aipool_queue_depth"]


@pytest.mark.parametrize(("setting", "sender"), [(None, "pool"), ("prometheus", "prometheus")])
def test_given_the_alert_setting_when_scraped_then_the_sender_is_exported(
    ledger: Engine, monkeypatch: pytest.MonkeyPatch, setting: str | None, sender: str
) -> None:
    monkeypatch.delenv("AIPOOL_ALERTS", raising=False)
    if setting:
        monkeypatch.setenv("AIPOOL_ALERTS", setting)
    value = _registry(_state(fakeredis.FakeRedis(), ledger)).get_sample_value
    assert value("aipool_alert_sender_info", {"sender": sender}) == 1


def test_given_a_worker_when_scraped_then_it_names_the_queues_it_consumes() -> None:
    value = _registry(WorkerQueues(["ollama", "router"])).get_sample_value
    assert value("aipool_worker_consumes", {"queue": "ollama"}) == 1
    assert value("aipool_worker_consumes", {"queue": "router"}) == 1
    assert value("aipool_worker_consumes", {"queue": "gemini"}) is None


def test_given_messages_in_a_redis_queue_when_asked_then_the_broker_counts_them() -> None:
    # Given: three messages on a queue nobody consumes, on the test Redis
    from celery import Celery

    url = os.environ.get("AIPOOL_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
    app = Celery("aipool-test-depth", broker=url, set_as_current=False)
    queue = "aipool-test-depth"
    client = redis.Redis.from_url(url)
    client.delete(queue)
    try:
        for _ in range(3):
            app.send_task("ai.ping", queue=queue, routing_key=queue)
        # When
        depths = broker_queue_depths(app, [queue, "aipool-test-empty"])
    finally:
        client.delete(queue)
        client.close()
        app.close()
    # Then: an empty (absent) queue holds nothing
    assert depths == {queue: 3, "aipool-test-empty": 0}


def test_given_services_spending_when_scraped_then_each_declared_service_has_its_cost_and_budget(
    ledger: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given batch (budget $4) and triage declared, and rows of batch, triage and two names the
    # table does not declare
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[rules]]\nname = "all"\nprovider = "gemini"\n\n'
        "[services.batch]\nmonthly_budget_usd = 4\n"
        "[services.batch.shares.gemini]\ndaily_tokens = 0.1\n\n[services.triage]\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(routes))
    rows = [("batch", "1.50", NOW), ("batch", "1.00", NOW - timedelta(days=3))]
    rows += [("triage", "0.25", NOW), ("old-name", "0.10", NOW), ("other", "0.05", NOW)]
    for service, cost, at in rows:
        record = UsageRecord(
            uuid.uuid4().hex, 0, "gemini", "m", "ok", True, input_tokens=10,
            cost_usd=Decimal(cost), created_at=at, service=service,
        )  # fmt: skip
        with ledger.begin() as conn:
            conn.execute(usage_logs.insert(), [_row(record)])
    # When scraped
    value = _registry(_state(fakeredis.FakeRedis(), ledger)).get_sample_value
    # Then each declared service has its day and month; undeclared names are counted as other
    cost = "aipool_service_cost_usd"
    assert value(cost, {"service": "batch", "period": "day"}) == 1.5
    assert value(cost, {"service": "batch", "period": "month"}) == 2.5
    assert value(cost, {"service": "triage", "period": "month"}) == 0.25
    assert value(cost, {"service": "other", "period": "day"}) == pytest.approx(0.15)
    assert value(cost, {"service": "old-name", "period": "day"}) is None
    assert value("aipool_service_budget_usd", {"service": "batch"}) == 4
    assert value("aipool_service_budget_usd", {"service": "triage"}) == 0
    # And batch's share of Gemini's day (10% of 100,000 tokens) beside what it used of it today
    share = {"service": "batch", "provider": "gemini", "limit": "daily_tokens"}
    assert value("aipool_service_share_limit", share) == 10_000
    assert value("aipool_service_share_used", share) == 10
    assert value("aipool_service_share_used", {**share, "service": "triage"}) is None


def test_given_a_waiting_urgent_lane_when_scraped_then_its_oldest_age_is_a_gauge(
    ledger: Engine,
) -> None:
    # Given: a request waiting 12.5 s in Claude's urgent lane, none in Ollama's
    state = _state(fakeredis.FakeRedis(), ledger, {"claude.urgent": 1, "ollama.urgent": 0})
    state.queue_ages = lambda: {"claude.urgent": 12.5, "ollama.urgent": 0.0}
    # When
    value = _registry(state).get_sample_value
    # Then: each lane's length and the age of its oldest message, which the alert reads
    assert value("aipool_queue_depth", {"queue": "claude.urgent"}) == 1
    assert value("aipool_queue_oldest_age_seconds", {"queue": "claude.urgent"}) == 12.5
    assert value("aipool_queue_oldest_age_seconds", {"queue": "ollama.urgent"}) == 0


def test_given_a_provider_paused_by_its_rate_limit_when_scraped_then_the_pause_left_is_a_gauge(
    ledger: Engine,
) -> None:
    # Given: Gemini paused until 18 s from now (the attempt script's record of a 429's delay)
    client = fakeredis.FakeRedis()
    client.hset("aipool:breaker:gemini:state", "paused_until", repr(NOW.timestamp() + 18))
    # When
    value = _registry(_state(client, ledger)).get_sample_value
    # Then: its pause is shown, and its breaker is still closed
    assert value("aipool_provider_paused_seconds", {"provider": "gemini"}) == 18
    assert value("aipool_breaker_state", {"provider": "gemini", "state": "closed"}) == 1
    assert value("aipool_provider_paused_seconds", {"provider": "claude"}) == 0
