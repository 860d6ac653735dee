"""The journey a message carries is re-anchored on the route the worker computes itself: every
journey routing produces is accepted as it is, and what a producer changes in one decides nothing."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aipool.contract.journey import Attempt, Journey
from aipool.contract.request import parse_request
from aipool.errors import InvalidJourney
from aipool.providers.catalog import PROVIDERS
from aipool.routing.router import decide

TOOL = {
    "name": "restart_pod",
    "description": "Restart a pod",
    "parameters": {"type": "object", "properties": {"pod": {"type": "string"}}},
}
TEXTS = st.sampled_from(
    [
        "What is a pod?",
        "Review this diff: ```python\ndef f(x):\n    return x + 1\n```",
        "payments 5xx up 8%, ledger-db lag 40 s, reconcile job failing: find the root cause",
        "告警：member-service 逾時、session Redis 記憶體 95%，請分析根因",
        "Summarise yesterday's incident timeline for the postmortem",
        "Restart the payment-api pod in prod",
        "hi, how are you?",
    ]
)
REQUESTS = st.builds(
    lambda text, priority, tools, intent: {
        "prompt": text,
        **({"priority": priority} if priority else {}),
        **({"tools": [TOOL]} if tools else {}),
        **({"intent": intent} if intent else {}),
    },
    TEXTS,
    st.sampled_from([None, "low", "normal", "high", "critical"]),
    st.booleans(),
    st.sampled_from([None, "QUERY", "CODE_REVIEW", "ALERT_TRIAGE", "CHAT"]),
)


@settings(max_examples=200, deadline=None)
@given(raw=REQUESTS, data=st.data())
def test_every_journey_routing_produces_is_accepted_as_it_is(
    raw: dict[str, Any], data: Any
) -> None:
    # Given a request, its route, and a message for any hop of it on that hop's queue
    route = decide(parse_request(raw))
    position = data.draw(st.integers(0, len(route.chain) - 2))
    sent = Journey(route=route, position=position, id="j").to_dict()
    # When a worker receives it
    received = Journey.received(sent, "j", route, route.chain[position].provider)
    # Then it runs that very hop of that very route
    assert (received.route, received.position) == (route, position)


@settings(max_examples=200, deadline=None)
@given(raw=REQUESTS, data=st.data())
def test_a_journey_changed_to_reach_another_provider_is_refused(
    raw: dict[str, Any], data: Any
) -> None:
    # Given a message for a hop of a request's route
    route = decide(parse_request(raw))
    position = data.draw(st.integers(0, len(route.chain) - 2))
    sent = Journey(route=route, position=position, id="j").to_dict()
    hop = dict(sent["route"]["chain"][position])
    off_chain = [p for p in PROVIDERS if route.index_or_none(p) is None]
    mutation = data.draw(st.sampled_from(["queue", "provider", "position", "id"]))
    queue = hop["provider"]
    if mutation == "queue":
        # it arrives on another provider's queue
        queue = data.draw(st.sampled_from([p for p in PROVIDERS if p != hop["provider"]]))
    elif mutation == "provider" and off_chain:
        # it names a provider the request's chain never reaches, on that provider's queue
        queue = data.draw(st.sampled_from(off_chain))
        sent["route"]["chain"][position] = {"provider": queue, "model": "any"}
    elif mutation == "position":
        sent["position"] = data.draw(st.sampled_from([-1, len(route.chain), 99]))
    else:
        sent["id"] = "another-request"
    # Then the worker refuses it before any call
    if mutation == "provider" and not off_chain:
        return
    with pytest.raises(InvalidJourney):
        Journey.received(sent, "j", route, queue)


def test_what_the_message_says_of_the_route_and_attempts_is_not_kept() -> None:
    # Given a message whose route names another model, intent and reason, with invented attempts
    route = decide(parse_request({"prompt": "Summarise the incident", "priority": "critical"}))
    sent = Journey(route=route, position=1, id="j").to_dict()
    sent["route"]["intent"] = "FORGED"
    sent["route"]["reason"] = "forged"
    sent["route"]["chain"][1]["model"] = "a-model-nobody-routes-to"
    first = route.chain[0]
    sent["attempts"] = [
        Attempt(first.provider, first.model, "error", "timeout: slow").to_dict(),
        Attempt("openai", "gpt-9", "ok").to_dict(),
        Attempt(route.chain[1].provider, route.chain[1].model, "ok").to_dict(),
        Attempt(first.provider, first.model, "made-up-outcome").to_dict(),
    ]
    # When a worker receives it
    received = Journey.received(sent, "j", route, route.chain[1].provider)
    # Then the route is the worker's own, and only the attempt that fits the chain before this hop
    # is kept
    assert received.route == route
    assert [(a.provider, a.outcome) for a in received.attempts] == [(first.provider, "error")]


def test_a_received_at_that_is_not_a_finite_time_is_refused() -> None:
    route = decide(parse_request({"prompt": "What is a pod?"}))
    for bad in (math.nan, math.inf):
        sent = {**Journey(route=route, id="j").to_dict(), "received_at": bad}
        with pytest.raises(InvalidJourney, match="finite"):
            Journey.received(sent, "j", route, route.chain[0].provider)


def test_a_hop_is_accepted_on_either_lane_of_its_provider_and_no_other() -> None:
    # Given a message for a request's first hop
    route = decide(parse_request({"prompt": "What is a pod?"}))
    provider = route.chain[0].provider
    sent = Journey(route=route, position=0, id="j").to_dict()
    # Then it is that provider's on its urgent lane too
    assert Journey.received(sent, "j", route, f"{provider}.urgent").position == 0
    # and refused on another provider's urgent lane
    other = next(p for p in PROVIDERS if p != provider)
    with pytest.raises(InvalidJourney):
        Journey.received(sent, "j", route, f"{other}.urgent")
