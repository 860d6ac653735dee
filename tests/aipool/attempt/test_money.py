"""The money rules a call is admitted by, over the real attempt script (fakeredis and real Redis):
the pool's cap on paid spend, a service's budget and share of a provider's day, the saving mode."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from aipool.attempt.layout import Call, Ended, spend_key
from aipool.attempt.money import MoneyRules, micro
from aipool.contract.route import Hop
from aipool.routing.table import parse_table
from tests.support.attempts import (
    SimulatedPool,
    answered,
    begin,
    failed,
    header,
)
from tests.support.guards import client, real_redis

__all__ = ["client", "real_redis"]

GENERAL = (
    Hop("gemini", "gemini-2.5-flash"),
    Hop("claude", "claude-sonnet-4-5"),
    Hop("ollama", "llama3.2:3b"),
    Hop("static", "static"),
)
#: What a call may cost at each hop: Gemini 1,000 micro-dollars, Claude 8,000, Ollama nothing.
COSTS = (1_000, 8_000, 0, 0)
TABLE = parse_table(
    {
        "rules": [{"name": "any", "provider": "gemini"}],
        "services": {
            "batch": {"name": "Nightly summaries", "shares": {"gemini": {"daily_tokens": 0.1}}},
            "capped": {"name": "Experiments", "monthly_budget_usd": 0.0025},
            "triage": {"name": "Alert triage"},
        },
    }
)


def _pool(client: Any, **money: Any) -> SimulatedPool:
    rules = {"cap_usd": None, "budget_usd": Decimal(10), "save_from": None, "save_below": "normal"}
    return SimulatedPool(client, money=MoneyRules(**{**rules, **money}), table=TABLE)


def _month_spend(pool: SimulatedPool) -> dict[str, int]:
    month = pool.worker().quotas["gemini"].periods(pool.time.now)[1].label
    raw = pool.client.hgetall(spend_key(month))
    return {k.decode(): int(v) for k, v in raw.items()}


def _call(pool: SimulatedPool, name: str, **kw: Any) -> Any:
    h = header(journey_id=name, chain=GENERAL, costs=COSTS, **kw)
    return h, begin(pool.worker(), h, owner=name)


def test_the_pools_cap_sends_requests_past_paid_hops_once_reached(client: Any) -> None:
    # Given a cap of $0.0095 a month on paid calls
    pool = _pool(client, cap_usd=Decimal("0.0095"))
    # When a first request begins at Gemini ($0.001 estimated) and is answered for $0.0009
    h, call = _call(pool, "first")
    assert isinstance(call, Call)
    answered(pool.worker(), h, 0, call, "first", cost=900)
    # Then the month's spend holds what the call cost
    assert _month_spend(pool)["all"] == 900
    # And when Claude (estimated $0.008) would take it over $0.0095, it is skipped: budget_exhausted
    big = header(journey_id="second", chain=GENERAL[1:], costs=COSTS[1:])
    pool.client.hincrby(
        spend_key(pool.worker().quotas["gemini"].periods(pool.time.now)[1].label), "all", 1_000
    )
    skipped = begin(pool.worker(), big, owner="second")
    assert isinstance(skipped, Ended) and skipped.code == "budget_exhausted"
    # And the request goes on to Ollama, which costs nothing
    assert skipped.decision.next == "ollama"


def test_a_service_over_its_share_of_geminis_day_goes_on_while_others_are_served(
    client: Any,
) -> None:
    # Given batch may use 10% of Gemini's daily tokens (100,000 by ADR-006: 10,000), 4,000 a call
    pool = _pool(client)
    admitted = []
    for i in range(4):
        _, reply = _call(pool, f"batch-{i}", service="batch", tokens=4_000)
        admitted.append(isinstance(reply, Call))
    # Then two calls fit its share, and the third is passed over for its service
    assert admitted == [True, True, False, False]
    _, third = _call(pool, "batch-2b", service="batch", tokens=4_000)
    assert isinstance(third, Ended) and third.code == "service_budget_exhausted"
    assert third.detail == ("daily_tokens",)
    # And triage's requests still go to Gemini
    _, triage = _call(pool, "triage-1", service="triage", tokens=4_000)
    assert isinstance(triage, Call)


def test_a_services_monthly_budget_holds_its_paid_hops_only(client: Any) -> None:
    # Given a service's budget of $0.0025 a month, and two Gemini calls of $0.001 each answered
    pool = _pool(client)
    for i in range(2):
        h, call = _call(pool, f"b{i}", service="capped")
        answered(pool.worker(), h, 0, call, f"b{i}", cost=1_000)
    # When a third would take it to $0.003
    _, third = _call(pool, "b2", service="capped")
    # Then it is skipped for its service's budget, and its chain goes on (Claude: also paid, also
    # over; then Ollama, free)
    assert isinstance(third, Ended) and third.code == "service_budget_exhausted"
    assert third.decision.next == "ollama"
    assert [p.code for p in third.decision.passed] == ["service_budget_exhausted"]
    assert _month_spend(pool) == {"all": 2_000, "svc:capped": 2_000}


def test_a_call_that_fails_unbilled_gives_its_spend_back(client: Any) -> None:
    pool = _pool(client)
    h, call = _call(pool, "fails")
    assert _month_spend(pool)["all"] == 1_000  # the estimate, while it runs
    failed(pool.worker(), h, 0, call, "fails")
    assert _month_spend(pool)["all"] == 0
    # while a call that may have been billed keeps its estimate
    h2, call2 = _call(pool, "times-out")
    failed(pool.worker(), h2, 0, call2, "times-out", billed=True, code="timeout")
    assert _month_spend(pool)["all"] == 1_000


@pytest.mark.parametrize(("priority", "admitted"), [("low", False), ("normal", True)])
def test_past_the_saving_threshold_low_priority_work_stays_off_paid_hops(
    client: Any, priority: str, admitted: bool
) -> None:
    # Given the month at 92% of a $0.01 budget and the saving mode from 90% for work below normal
    pool = _pool(client, budget_usd=Decimal("0.01"), save_from=0.9)
    month = pool.worker().quotas["gemini"].periods(pool.time.now)[1].label
    pool.client.hset(spend_key(month), mapping={"all": micro(Decimal("0.0092"))})
    # When a request of each priority comes
    _, reply = _call(pool, f"req-{priority}", priority=priority)
    # Then low-priority work is passed over Gemini and Claude to Ollama; normal is served
    if admitted:
        assert isinstance(reply, Call)
    else:
        assert isinstance(reply, Ended) and reply.code == "budget_saving"
        assert reply.decision.next == "ollama"
        assert reply.detail == ("monthly_budget",)


def test_an_undeclared_service_is_counted_as_other(client: Any) -> None:
    pool = _pool(client)
    assert TABLE.service_of("nobody-declared-me") == "other"
    h, call = _call(pool, "x", service=TABLE.service_of("nobody-declared-me"))
    answered(pool.worker(), h, 0, call, "x", cost=500)
    assert _month_spend(pool) == {"all": 500, "svc:other": 500}
