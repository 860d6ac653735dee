"""What a producer gets at the edges of ``ai.generate``: always a contract result, the options it
sent kept on every hop, forged journeys refused, nothing of the prompt left in Redis.

These tests run their own worker (the instrumented app) on a Redis database of their own, so every
message of theirs is served by it and what each hop received can be read back.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery, chord, group

from aipool.contract.journey import Journey
from aipool.contract.request import parse_request
from aipool.routing.router import decide
from tests.support.private_pool import PrivatePool, private_pool, send

pytestmark = pytest.mark.integration
TIMEOUT = 60
HOPS_KEY = "aipool:test:hops"


@pytest.fixture(scope="module")
def private(simulator, ledger_url) -> Iterator[PrivatePool]:  # type: ignore[no-untyped-def]
    """An instrumented worker on a Redis database no other test uses."""
    with private_pool(
        15,
        AIPOOL_TEST_HOPS_KEY=HOPS_KEY,
        # The time-limit test needs calls that outlive the producer's limit, not the timeout.
        AIPOOL_TIMEOUT_OLLAMA="30",
    ) as pool:
        yield pool


@pytest.fixture()
def producer(private, healthy) -> tuple[Celery, Any]:  # type: ignore[no-untyped-def]
    for key in private.client.scan_iter("aipool:*"):
        private.client.delete(key)
    return private.app, private.client


def _send(app: Celery, **options: Any) -> Any:
    options.setdefault("kwargs", {"request": {"prompt": "What is a pod?"}})
    return app.send_task("ai.generate", queue="router", **options)


def _hops(client: Any) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in client.lrange(HOPS_KEY, 0, -1)]


def test_positional_arguments_get_an_error_not_a_failure(producer) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    # When a producer passes the request positionally
    answer = _send(app, args=[{"prompt": "What is a pod?"}], kwargs={}).get(timeout=TIMEOUT)
    # Then it gets a contract error saying how to call
    assert answer["status"] == "error"
    assert answer["error"]["code"] == "positional_arguments"


CRITICAL = {"prompt": "Summarise the incident", "priority": "critical"}
TOOLS = [
    {
        "name": "restart_pod",
        "description": "Restart a pod",
        "parameters": {"type": "object", "properties": {"pod": {"type": "string"}}},
    }
]


def _journey(change: Any, request: dict[str, Any] = CRITICAL) -> Any:
    journey = Journey(route=decide(parse_request(request))).to_dict()
    return change(journey)


def _at(position: int) -> Any:
    return lambda j: {**j, "position": position}


def _chain_of(*providers: str) -> Any:
    def change(j: dict[str, Any]) -> dict[str, Any]:
        chain = [{"provider": p, "model": "any-model"} for p in providers]
        return {**j, "route": {**j["route"], "chain": chain}, "position": 0}

    return change


def _first_provider(provider: str) -> Any:
    def change(j: dict[str, Any]) -> dict[str, Any]:
        chain = [dict(hop) for hop in j["route"]["chain"]]
        chain[0] = {"provider": provider, "model": "gpt-9"}
        return {**j, "route": {**j["route"], "chain": chain}}

    return change


@pytest.mark.parametrize(
    ("forge", "request_", "queue"),
    [
        (_at(99), CRITICAL, "claude"),
        (_at(-1), CRITICAL, "claude"),
        (_first_provider("openai"), CRITICAL, "claude"),
        (lambda j: {**j, "route": "claude"}, CRITICAL, "claude"),
        # a hop for Claude sent to Ollama's queue: that worker holds no Claude key
        (_at(0), CRITICAL, "ollama"),
        # a general request on a chain starting at Nemotron, which routing never builds
        (_chain_of("nemotron", "gemini", "claude", "static"), CRITICAL, "nemotron"),
        # a tool request put on the general chain (it would end in the static answer)
        (_chain_of("ollama", "gemini", "claude", "static"), {**CRITICAL, "tools": TOOLS}, "ollama"),
    ],
    ids=[
        "past-the-end",
        "negative",
        "unknown-provider",
        "garbage",
        "another-providers-queue",
        "general-chain-at-nemotron",
        "tools-on-the-general-chain",
    ],
)
def test_a_forged_journey_is_refused_before_any_call(
    producer, healthy, forge, request_, queue
) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    # When a message arrives with a journey routing never produced, or on another provider's queue
    sent = app.send_task(
        "ai.generate",
        kwargs={"request": request_, "journey": _journey(forge, request_)},
        queue=queue,
        routing_key=queue,
    )
    answer = sent.get(timeout=TIMEOUT)
    # Then it is refused with invalid_journey
    assert answer["status"] == "error", answer["attempts"]
    assert answer["error"]["code"] == "invalid_journey"
    # And no provider was called for it, and no breaker counted anything
    assert sum(healthy.calls(p) for p in ("ollama", "nemotron", "gemini", "claude")) == 0
    assert not any(True for _ in producer[1].scan_iter("aipool:breaker:*"))


def test_what_a_producer_forges_of_the_route_decides_nothing(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer

    def forge(j: dict[str, Any]) -> dict[str, Any]:
        chain = [dict(hop) for hop in j["route"]["chain"]]
        chain[0]["model"] = "claude-opus-9-ultra"
        route = {**j["route"], "chain": chain, "intent": "FORGED", "reason": "forged reason"}
        fake = {"provider": "gemini", "model": "x", "outcome": "ok", "error": "forged"}
        return {**j, "route": route, "position": 0, "attempts": [fake]}

    # When a message for Claude names a model, an intent and a reason routing never gave it, and
    # attempts that never happened
    answer = app.send_task(
        "ai.generate",
        kwargs={"request": CRITICAL, "journey": _journey(forge)},
        queue="claude",
        routing_key="claude",
    ).get(timeout=TIMEOUT)
    # Then Claude answers with the pool's own model, and the result carries the pool's route
    expected = decide(parse_request(CRITICAL))
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert answer["model"] == expected.first.model
    assert (answer["route"]["intent"], answer["route"]["reason"]) == (
        expected.intent,
        expected.reason,
    )
    assert [a["provider"] for a in answer["attempts"]] == ["claude"]


def test_a_forged_route_decides_nothing_once_the_worker_remembers_the_request(
    producer, healthy
) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    # Given the worker routed this request itself already (its decision is remembered)
    genuine = _send(app, kwargs={"request": CRITICAL}).get(timeout=TIMEOUT)
    assert (genuine["status"], genuine["provider"]) == ("ok", "claude")

    def forge(j: dict[str, Any]) -> dict[str, Any]:
        chain = [dict(hop) for hop in j["route"]["chain"]]
        chain[0]["model"] = "claude-opus-9-ultra"
        return {**j, "route": {**j["route"], "chain": chain, "intent": "FORGED"}, "position": 0}

    # When messages for the same request carry a forged route: another model, and a chain
    # routing never builds for it
    forged_model = app.send_task(
        "ai.generate",
        kwargs={"request": CRITICAL, "journey": _journey(forge)},
        queue="claude",
        routing_key="claude",
    ).get(timeout=TIMEOUT)
    forged_chain = app.send_task(
        "ai.generate",
        kwargs={
            "request": CRITICAL,
            "journey": _journey(_chain_of("nemotron", "gemini", "claude", "static")),
        },
        queue="nemotron",
        routing_key="nemotron",
    ).get(timeout=TIMEOUT)
    # Then the first is served on the pool's own route, and the second refused before any call
    expected = decide(parse_request(CRITICAL))
    assert (forged_model["model"], forged_model["route"]["intent"]) == (
        expected.first.model,
        expected.intent,
    )
    assert forged_chain["error"]["code"] == "invalid_journey"
    assert healthy.calls("nemotron") == 0


def test_a_message_positioned_at_the_static_answer_is_routed_as_the_pool_would(
    producer, healthy
) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    # When a message claims every provider was passed over (positioned at the static answer)
    journey = _journey(lambda j: {**j, "position": len(j["route"]["chain"]) - 1})
    answer = app.send_task(
        "ai.generate", kwargs={"request": CRITICAL, "journey": journey}, queue="router"
    ).get(timeout=TIMEOUT)
    # Then the pool routes it itself: Claude answers
    assert (answer["status"], answer["provider"]) == ("ok", "claude")


def test_redispatch_keeps_the_producers_options_and_shows_no_prompt(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, client = producer
    word = f"zebra{uuid.uuid4().hex[:8]}"
    # Given ollama failing, so the request visits router, ollama and gemini
    healthy.set_fault("ollama", "error_500")
    # When it is sent with a priority, an expiry and time limits
    answer = _send(
        app,
        kwargs={"request": {"prompt": f"What is a pod? {word}"}},
        priority=7,
        expires=300,
        time_limit=50,
        soft_time_limit=40,
    ).get(timeout=TIMEOUT)
    assert (answer["status"], answer["provider"]) == ("ok", "gemini")
    hops = _hops(client)
    # Then every hop's message carried its priority and expiry; the time limits only the
    # producer's own message: the hops after it run under the pool's (issue #42)
    assert [h["queue"] for h in hops] == ["router", "ollama", "gemini"]
    assert all(h["priority"] == 7 for h in hops), hops
    assert hops[0]["expires"] and all(h["expires_at"] for h in hops[1:]), hops
    assert hops[0]["timelimit"] == [50, 40], hops
    assert all(h["timelimit"] == [120, 90] for h in hops[1:]), hops  # the pool's defaults
    # And no hop shows the prompt (Flower and task events read kwargsrepr): the producer's own
    # message is withheld at the worker's edge, the pool's describe the hop
    assert all(word not in hop["kwargsrepr"] for hop in hops)
    assert all("'provider'" in hop["kwargsrepr"] for hop in hops[1:])


def test_a_request_whose_expiry_passes_mid_chain_gets_the_static_answer(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, client = producer
    # Given Claude, the first hop of a critical request, hanging past its 2 s timeout
    healthy.set_fault("claude", "hang")
    # When the request is sent with a 1 s expiry: taken at once, its call to Claude cut at the
    # expiry (before Claude's own timeout), the hops after it due after it expired
    answer = _send(app, kwargs={"request": CRITICAL}, expires=1).get(timeout=TIMEOUT)
    # Then the producer gets the chain's static answer, not Celery's TaskRevokedError, and no
    # provider was called after the expiry: each later hop says it was passed over for time
    trail = [(a["provider"], a["outcome"]) for a in answer["attempts"]]
    assert answer["status"] == "fallback", answer
    assert trail == [
        ("claude", "error"),
        ("ollama", "deadline"),
        ("gemini", "deadline"),
        ("static", "fallback"),
    ], trail
    assert "expir" in answer["attempts"][1]["error"], answer["attempts"][1]
    assert (healthy.calls("ollama"), healthy.calls("gemini")) == (0, 0)
    # And the hops after the first carried the expiry as the pool's header, not Celery's
    # ``expires``, which had the worker revoke the message unanswered
    hops = _hops(client)
    assert hops[0]["expires"] and not any(h["expires"] for h in hops[1:]), hops
    assert all(h["expires_at"] for h in hops[1:]), hops


def test_a_call_the_requests_expiry_passes_during_is_cut_there(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    # Given Ollama, the first hop of a plain question, hanging (its timeout here is 30 s)
    healthy.set_fault("ollama", "hang")
    # When the request is sent with a 2 s expiry: taken at once, Ollama's call begun before it
    sent = time.monotonic()
    answer = _send(app, expires=2).get(timeout=TIMEOUT)
    waited = time.monotonic() - sent
    # Then the call is cut at the expiry, and the producer gets the chain's static answer well
    # before Ollama's own timeout, the cut booked as the deadline's (not Ollama's fault)
    assert answer["status"] == "fallback", answer
    assert waited < 10, waited
    trail = [(a["provider"], a["outcome"], a["code"]) for a in answer["attempts"]]
    assert trail == [
        ("ollama", "error", "deadline"),
        ("gemini", "deadline", None),
        ("claude", "deadline", None),
        ("static", "fallback", None),
    ], trail
    assert "expired during the call" in answer["attempts"][0]["error"], answer["attempts"][0]
    # And no provider after it was called: the request had expired
    assert (healthy.calls("gemini"), healthy.calls("claude")) == (0, 0)


def test_nothing_of_the_prompt_stays_in_redis_once_answered(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, client = producer
    word = f"okapi{uuid.uuid4().hex[:8]}"
    # Given a request that fails over from ollama to gemini, a paid provider
    healthy.set_fault("ollama", "error_500")
    answer = _send(app, kwargs={"request": {"prompt": f"Explain {word} please"}}).get(
        timeout=TIMEOUT
    )
    assert answer["status"] == "ok"
    time.sleep(0.5)  # the last ack lands after the result
    # Then no key of the database holds the word
    found = []
    for key in client.scan_iter("*"):
        kind = client.type(key).decode()
        if kind == "string":
            values = [client.get(key)]
        elif kind == "list":
            values = client.lrange(key, 0, -1)
        elif kind == "hash":
            values = list(client.hgetall(key).values())
        elif kind == "zset":
            values = client.zrange(key, 0, -1)
        elif kind == "set":
            values = list(client.smembers(key))
        else:
            values = []
        if any(word.encode() in (v or b"") for v in values):
            found.append(key)
    assert found == []


def test_a_group_and_a_chord_of_requests_resolve(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    healthy.set_fault("ollama", "error_500")  # every member is re-dispatched at least once
    members = [
        app.signature(
            "ai.generate", kwargs={"request": {"prompt": f"Question {n}?"}}, queue="router"
        )
        for n in range(3)
    ]
    answers = group(members).apply_async().get(timeout=TIMEOUT)
    assert [a["status"] for a in answers] == ["ok"] * 3
    body = app.signature("tests.collect", queue="router")
    collected = chord(members)(body).get(timeout=TIMEOUT)
    assert [a["status"] for a in collected] == ["ok"] * 3
    assert {a["provider"] for a in collected} == {"gemini"}


def test_the_hard_time_limit_answers_the_producer(simulator, healthy, ledger_url) -> None:  # type: ignore[no-untyped-def]
    # Given a worker whose hops have a 3 s hard limit and no soft limit to move on with, and
    # ollama hanging past it
    healthy.set_fault("ollama", "hang", seconds=15)
    with private_pool(
        7,
        AIPOOL_TASK_TIME_LIMIT="3",
        AIPOOL_TASK_SOFT_TIME_LIMIT="none",
        AIPOOL_TIMEOUT_OLLAMA="30",
    ) as pool:
        # When the hop's process is killed by the hard limit
        answer = send(pool, {"prompt": "What is a pod?"}).get(timeout=TIMEOUT)
    # Then the producer gets a contract error, not a Celery failure
    assert answer["status"] == "error", answer["attempts"]
    assert answer["error"]["code"] == "time_limit"


def test_a_producers_soft_time_limit_does_not_cut_a_providers_call(producer, healthy) -> None:  # type: ignore[no-untyped-def]
    app, _ = producer
    healthy.set_fault("ollama", "slow", ms=3000)
    # When ollama takes 3 s (its timeout is 30 s) and the message asks a soft limit of 1 s
    answer = _send(app, soft_time_limit=1, time_limit=20).get(timeout=TIMEOUT)
    # Then ollama answers: the message's limits are not the hop's (issue #42), which are the
    # pool's, so a producer cannot cut a healthy provider short and have it booked as its fault
    assert (answer["status"], answer["provider"]) == ("ok", "ollama"), answer["attempts"]
    assert [(a["provider"], a["outcome"]) for a in answer["attempts"]] == [("ollama", "ok")]


def test_a_refused_request_is_not_kept_in_full_and_results_expire_within_the_hour(producer) -> None:  # type: ignore[no-untyped-def]
    app, client = producer
    # When a 2 MB prompt is sent (refused: too large)
    answer = _send(app, kwargs={"request": {"prompt": "x" * 2_000_000}}).get(timeout=TIMEOUT)
    assert answer["error"]["code"] == "prompt_too_large"
    # Then the stored result is the small contract error, not the input, and it expires in an hour
    key = f"celery-task-meta-{answer['request_id']}"
    assert len(client.get(key)) < 4096
    assert 0 < client.ttl(key) <= 3600
