"""Money rules with real workers: a service's share of a provider's day, the saving mode past 90%
of the month's budget, and the pool's cap on paid spend (issues #24 and #19)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from aipool.attempt.layout import spend_key
from aipool.attempt.money import micro
from aipool.periods import month_of, pool_zone
from aipool.simulator import Simulator
from tests.support.accounting import drain_everything, ledger_rows, trail
from tests.support.metrics import metrics_env, scrape
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.services import RedisServer, free_port

pytestmark = pytest.mark.integration
TIMEOUT = 90
ROUTES = """
[[rules]]
name = "everything_to_gemini"
provider = "gemini"

[services.batch]
name = "Nightly summaries"
[services.batch.shares.gemini]
daily_tokens = 0.1

[services.triage]
name = "Alert triage"
"""
#: 300 output tokens and a short prompt: a reservation of about 310 tokens.
ASK: dict[str, Any] = {"prompt": "Summarise yesterday's deploys", "max_tokens": 300}
#: Gemini's day is 20,000 tokens here: batch may use 2,000 of them (six calls).
LIMITS = {
    "AIPOOL_GEMINI_DAILY_TOKENS": "20000",
    "AIPOOL_GEMINI_RPM": "unlimited",
    "AIPOOL_GEMINI_DAILY_REQUESTS": "unlimited",
    "AIPOOL_CLAUDE_RPM": "unlimited",
}


@pytest.fixture()
def routes(tmp_path: Path) -> str:
    path = tmp_path / "routes.toml"
    path.write_text(ROUTES, encoding="utf-8")
    return str(path)


def _gemini_tokens_by_service(rows: list[Any]) -> dict[str, int]:
    used: dict[str, int] = defaultdict(int)
    for row in rows:
        if row.provider == "gemini" and row.outcome in ("ok", "error", "abandoned"):
            used[row.service] += row.input_tokens + row.output_tokens
    return dict(used)


def _per_service(engine: Engine, routes: str) -> dict[str, tuple[int, Decimal]]:
    """``aipool report --by service``'s figures of today: tokens and cost per service."""
    from aipool.periods import local_day
    from aipool.routing.table import load_table
    from aipool.settings import settings
    from aipool.views.service_report import read_services

    zone = pool_zone()
    day = local_day(datetime.now(UTC), zone)
    report = read_services(engine, day, zone, load_table(routes), settings().limits)
    return {line.service: (line.usage.tokens, line.usage.cost_usd) for line in report.day_lines}


def _scraped_per_service(port: int) -> dict[str, tuple[int, float]]:
    """The worker's counters by service: tokens (every provider, model, direction) and cost."""
    body = scrape(port)
    tokens: dict[str, float] = defaultdict(float)
    cost: dict[str, float] = defaultdict(float)
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == "ai_tokens_total":
                tokens[sample.labels["service"]] += sample.value
            elif sample.name == "aipool_cost_usd_total":
                cost[sample.labels["service"]] += sample.value
    return {name: (int(tokens[name]), cost[name]) for name in tokens}


def test_a_service_over_its_share_goes_past_gemini_while_another_is_served(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
    routes: str,
    tmp_path: Path,
) -> None:
    # Given batch may use 10% of Gemini's 20,000 daily tokens, and triage has no share; the
    # worker serves its metrics, and the report's figures of the day so far are noted
    server = redis_server()
    port = free_port()
    spawn_worker(
        server.url,
        concurrency=2,
        AIPOOL_ROUTES_FILE=routes,
        **metrics_env(tmp_path / "prometheus", port),
        **LIMITS,
    )
    reported_before = _per_service(ledger, routes)
    send = producer(server.url)
    # When batch sends ten requests, one after another, then triage three
    batch = [
        send.collect([send.send({**ASK, "service": "batch"})], timeout=TIMEOUT)[0]
        for _ in range(10)
    ]
    triage = send.collect(
        [send.send({**ASK, "service": "triage"}) for _ in range(3)], timeout=TIMEOUT
    )
    # Then batch's first calls are Gemini's, the rest pass over Gemini for their service and are
    # answered by the next provider; triage's all go to Gemini
    firsts = [trail(o.answer or {})[0] for o in batch]
    served = firsts.count(("gemini", "ok"))
    assert 1 <= served < 10, firsts
    assert firsts[served:] == [("gemini", "service_budget_exhausted")] * (10 - served)
    assert all(o.answer and o.answer["status"] == "ok" for o in batch)
    assert [o.answer and o.answer["provider"] for o in triage] == ["gemini"] * 3
    assert all(o.answer and o.answer["route"]["service"] == "batch" for o in batch)
    # And the ledger says batch used no more of Gemini's day than its share
    drain_everything(server.client(), ledger)
    rows = ledger_rows(ledger, [o.task_id for o in batch + triage])
    used = _gemini_tokens_by_service(rows)
    assert used["batch"] <= 2_000 and used["triage"] > 0
    # (and it was turned away because one more reservation, about 310 tokens, no longer fit)
    assert used["batch"] + 310 > 2_000
    # And the ledger, the report per service and the metrics agree per service, to the token
    booked = _booked_per_service(rows)
    reported = _per_service(ledger, routes)
    scraped = _scraped_per_service(port)
    for name in ("batch", "triage"):
        tokens, cost = booked[name]
        before = reported_before.get(name, (0, Decimal(0)))
        assert (reported[name][0] - before[0], reported[name][1] - before[1]) == (tokens, cost)
        assert scraped[name][0] == tokens, name
        assert scraped[name][1] == pytest.approx(float(cost)), name
    assert set(scraped) <= {"batch", "triage", "other"}


def _booked_per_service(rows: list[Any]) -> dict[str, tuple[int, Decimal]]:
    """Tokens and cost per service in the ledger's rows."""
    tokens: dict[str, int] = defaultdict(int)
    cost: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        tokens[row.service] += row.input_tokens + row.output_tokens
        cost[row.service] += Decimal(row.cost_usd)
    return {name: (tokens[name], cost[name]) for name in tokens}


def test_four_processes_at_once_never_overspend_a_services_share(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
    routes: str,
) -> None:
    # Given four pool processes, and batch's share of 2,000 of Gemini's tokens
    server = redis_server()
    spawn_worker(server.url, concurrency=4, AIPOOL_ROUTES_FILE=routes, **LIMITS)
    send = producer(server.url)
    providers.set_fault("gemini", "slow", ms=300)
    # When batch sends twenty requests at once
    outcomes = send.collect(
        [send.send({**ASK, "service": "batch"}) for _ in range(20)], timeout=TIMEOUT
    )
    # Then they are all answered, and Gemini's calls for batch stay within its share: the share
    # is checked and counted in one step for the whole pool
    assert all(o.answer and o.answer["status"] == "ok" for o in outcomes)
    drain_everything(server.client(), ledger)
    used = _gemini_tokens_by_service(ledger_rows(ledger, [o.task_id for o in outcomes]))
    skipped = [o for o in outcomes if o.answer and o.answer["provider"] != "gemini"]
    assert skipped and all(
        trail(o.answer or {})[0] == ("gemini", "service_budget_exhausted") for o in skipped
    )
    assert used["batch"] <= 2_000


def test_past_90_percent_of_the_budget_low_priority_work_stays_off_paid_providers(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    routes: str,
) -> None:
    # Given a $0.01 monthly budget already 92% spent, and the saving mode at its defaults (from
    # 90%, for work below normal priority)
    server = redis_server()
    spawn_worker(server.url, AIPOOL_ROUTES_FILE=routes, AIPOOL_MONTHLY_BUDGET_USD="0.01", **LIMITS)
    month = month_of(time.time(), pool_zone()).label
    server.client().hset(spend_key(month), mapping={"all": micro("0.0092")})
    send = producer(server.url)
    # When a low-priority request and a critical one arrive
    low, critical = send.collect(
        [send.send({**ASK, "priority": "low"}), send.send({**ASK, "priority": "critical"})],
        timeout=TIMEOUT,
    )
    # Then the low one passes over Gemini and Claude to the local model; the critical one is
    # still served by the cloud (this table starts everything at Gemini)
    assert low.answer and critical.answer
    assert trail(low.answer)[:2] == [("gemini", "budget_saving"), ("claude", "budget_saving")]
    assert low.answer["provider"] == "ollama"
    assert (critical.answer["status"], critical.answer["provider"]) == ("ok", "gemini")


def test_the_pools_cap_on_paid_spend_sends_every_request_to_free_hops(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    routes: str,
) -> None:
    # Given a cap of $0.005 on paid calls this month, reached
    server = redis_server()
    spawn_worker(
        server.url, AIPOOL_ROUTES_FILE=routes, AIPOOL_CLOUD_SPEND_CAP_USD="0.005", **LIMITS
    )
    month = month_of(time.time(), pool_zone()).label
    server.client().hset(spend_key(month), mapping={"all": micro("0.005")})
    send = producer(server.url)
    # When a critical request arrives
    (answer,) = send.collect([send.send({**ASK, "priority": "critical"})], timeout=TIMEOUT)
    # Then no paid provider is called: the cap holds whatever the priority
    assert answer.answer is not None
    assert [o for _, o in trail(answer.answer)][:2] == ["budget_exhausted", "budget_exhausted"]
    assert answer.answer["provider"] == "ollama"
