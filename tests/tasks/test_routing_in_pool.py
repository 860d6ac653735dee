"""Smart routing end to end: real worker processes, real Redis, simulated providers.

The router's unit tests show which hop ``decide`` picks; these show that the pool then really asks
that provider for that model, that producers routing locally (``submit``) and producers sending by
name to the ``router`` queue get the same route, and that the ADR chain still holds after a routed
first hop fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from aipool.chains import default_model
from tasks.client import submit

pytestmark = pytest.mark.integration

TIMEOUT = 30

RESTART_TOOL = {
    "name": "restart_deployment",
    "description": "Restart a Kubernetes deployment",
    "parameters": {
        "type": "object",
        "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
        "required": ["namespace", "name"],
    },
}

# Texts in the style of tests/aipool/routing/labelled_requests.jsonl.
SIMPLE_QUERY = {"prompt": "What is a PodDisruptionBudget?", "user_id": "u-route"}
CODE_REVIEW = {
    "prompt": (
        "Please review this change before I merge it:\n"
        "```diff\n"
        "--- a/app/db.py\n"
        "+++ b/app/db.py\n"
        "@@ -10,7 +10,9 @@ def connect(url):\n"
        "-    return create_engine(url)\n"
        "+    engine = create_engine(url, pool_size=50)\n"
        "+    engine.connect()\n"
        "+    return engine\n"
        "```"
    )
}
COMPLEX_TRIAGE = {
    "prompt": (
        "同時收到三個告警：\n"
        "- HighErrorRate on checkout-service (5xx 12%)\n"
        "- PostgresReplicationLag on pg-replica-2 (45s)\n"
        "- KafkaConsumerLag on order-events (lag 120k)\n"
        "幫我分析這些告警之間的關聯，找出根因。"
    )
}
TOOL_REQUEST = {"prompt": "Restart the api deployment in prod", "tools": [RESTART_TOOL]}
CRITICAL = {"prompt": "What is a PodDisruptionBudget?", "priority": "critical"}

# (request, intent, complexity band, provider, model): the route table's answer for each request.
# The band is where the complexity must fall for that rule to be the one that applies.
ROUTED = [
    pytest.param(SIMPLE_QUERY, "QUERY", (1, 2), "ollama", "llama3.2:3b", id="simple-query"),
    pytest.param(CODE_REVIEW, "CODE_REVIEW", (1, 5), "ollama", "qwen2.5:7b", id="code-review"),
    pytest.param(
        COMPLEX_TRIAGE,
        "ALERT_TRIAGE",
        (4, 5),
        "gemini",
        default_model("gemini"),
        id="complex-triage",
    ),
    pytest.param(
        TOOL_REQUEST, "TOOL_CALL", (1, 5), "nemotron", default_model("nemotron"), id="tool-call"
    ),
    pytest.param(CRITICAL, "QUERY", (1, 5), "claude", default_model("claude"), id="critical"),
]
ROUTED_ARGS = ("request_body", "intent", "band", "provider", "model")
ALL_PROVIDERS = ("ollama", "gemini", "claude", "nemotron")


@pytest.fixture(autouse=True)
def _fresh(healthy, clean_redis, pool):  # type: ignore[no-untyped-def]
    """Every test starts with healthy providers, closed breakers and empty quotas."""


def _ask(request: dict[str, Any]) -> dict[str, Any]:
    async_result = submit(request)
    answer = async_result.get(timeout=TIMEOUT)
    assert answer["request_id"] == async_result.id
    return answer


def _ask_by_name(celery_app, request: dict[str, Any]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """As a service that imports only celery: ``ai.generate`` by name on the ``router`` queue."""
    async_result = celery_app.send_task(
        "ai.generate", kwargs={"request": request}, queue="router", routing_key="router"
    )
    answer = async_result.get(timeout=TIMEOUT)
    assert answer["request_id"] == async_result.id
    return answer


def _first_hop(answer: dict[str, Any]) -> dict[str, str]:
    return answer["route"]["chain"][0]


def _sent_model(sim, provider: str) -> str | None:  # type: ignore[no-untyped-def]
    """The model named in the last body the simulated provider received (Ollama/OpenAI/Anthropic)."""
    body = sim.last_requests(provider)[-1]
    assert isinstance(body, dict), body
    return body.get("model")


@pytest.mark.parametrize(ROUTED_ARGS, ROUTED)
def test_a_routed_request_is_answered_by_the_routed_provider_and_model(
    healthy, request_body, intent, band, provider, model
) -> None:  # type: ignore[no-untyped-def]
    # Given healthy providers
    # When a Python service submits the request (routed in the producer)
    answer = _ask(request_body)
    # Then the route names the intent, the complexity, the chosen first hop and why
    route = answer["route"]
    assert route["intent"] == intent
    assert band[0] <= route["complexity"] <= band[1]
    assert _first_hop(answer) == {"provider": provider, "model": model}
    assert route["reason"].strip()
    assert str(route["rule"]) in route["reason"]
    # And that provider answered, first time, with that model
    assert answer["status"] == "ok"
    assert answer["provider"] == provider
    assert answer["model"] == model
    assert [(a["provider"], a["model"], a["outcome"]) for a in answer["attempts"]] == [
        (provider, model, "ok")
    ]
    # And the simulated provider was the only one called, and was asked for that model
    assert {p: healthy.calls(p) for p in ALL_PROVIDERS} == {
        p: int(p == provider) for p in ALL_PROVIDERS
    }
    if provider == "gemini":
        # Gemini names the model in the URL path (/v1beta/models/{model}:generateContent); the
        # simulator keeps only the JSON body, which holds no model: check the body is this request's.
        body = healthy.last_requests("gemini")[-1]
        assert "model" not in body
        assert "找出根因" in str(body["contents"])
    else:
        assert _sent_model(healthy, provider) == model


@pytest.mark.parametrize(ROUTED_ARGS, ROUTED)
def test_by_name_on_the_router_queue_gets_the_same_route_as_submit(
    celery_app, healthy, request_body, intent, band, provider, model
) -> None:  # type: ignore[no-untyped-def]
    # Given the same request from a Python producer and from a service that knows only the name
    # When both are sent
    local = _ask(request_body)
    by_name = _ask_by_name(celery_app, request_body)
    # Then both get the same route, and the same provider answers with the same model
    for key in ("intent", "complexity", "chain", "rule", "reason"):
        assert by_name["route"][key] == local["route"][key], key
    assert by_name["route"]["intent"] == intent
    assert band[0] <= by_name["route"]["complexity"] <= band[1]
    assert _first_hop(by_name) == {"provider": provider, "model": model}
    assert (by_name["status"], by_name["provider"], by_name["model"]) == ("ok", provider, model)
    assert healthy.calls(provider) == 2


def test_a_code_review_with_ollama_down_follows_the_adr_chain_to_gemini(healthy) -> None:  # type: ignore[no-untyped-def]
    # Given Ollama is down
    healthy.set_fault("ollama", "down")
    # When a code review is submitted
    answer = _ask(CODE_REVIEW)
    # Then it was still routed to ollama's code model, and the chain after it is ADR order
    route = answer["route"]
    assert route["intent"] == "CODE_REVIEW"
    assert [(h["provider"], h["model"]) for h in route["chain"]] == [
        ("ollama", "qwen2.5:7b"),
        ("gemini", default_model("gemini")),
        ("claude", default_model("claude")),
        ("static", "static"),
    ]
    # And ollama was tried with qwen2.5:7b, then gemini answered
    assert [(a["provider"], a["model"], a["outcome"]) for a in answer["attempts"]] == [
        ("ollama", "qwen2.5:7b", "error"),
        ("gemini", default_model("gemini"), "ok"),
    ]
    assert answer["attempts"][0]["error"].startswith("unreachable")
    assert (answer["status"], answer["provider"], answer["model"]) == (
        "ok",
        "gemini",
        default_model("gemini"),
    )
    assert healthy.calls("gemini") == 1
    assert healthy.calls("claude") == 0


def test_a_critical_request_with_claude_down_falls_back_to_ollama(healthy) -> None:  # type: ignore[no-untyped-def]
    # Given Claude is down
    healthy.set_fault("claude", "down")
    # When a critical request is submitted
    answer = _ask(CRITICAL)
    # Then it started at claude and went on to the providers the ADR order passed over
    assert [h["provider"] for h in answer["route"]["chain"]] == [
        "claude",
        "ollama",
        "gemini",
        "static",
    ]
    assert [(a["provider"], a["outcome"]) for a in answer["attempts"]] == [
        ("claude", "error"),
        ("ollama", "ok"),
    ]
    assert answer["provider"] == "ollama"


@pytest.mark.parametrize(
    ("request_body", "classified", "explicit", "provider", "model"),
    [
        # A plain question the classifier calls QUERY, declared a code review by its producer.
        pytest.param(
            {**SIMPLE_QUERY, "intent": "code_review"},
            "QUERY",
            "CODE_REVIEW",
            "ollama",
            "qwen2.5:7b",
            id="query-declared-code-review",
        ),
        # A diff the classifier calls CODE_REVIEW, declared a query by its producer.
        pytest.param(
            {**CODE_REVIEW, "intent": "QUERY"},
            "CODE_REVIEW",
            "QUERY",
            "ollama",
            "llama3.2:3b",
            id="code-review-declared-query",
        ),
    ],
)
def test_an_explicit_intent_wins_over_the_classifier(
    celery_app, healthy, request_body, classified, explicit, provider, model
) -> None:  # type: ignore[no-untyped-def]
    # Given a request whose text classifies as one intent but whose producer declares another
    without = {k: v for k, v in request_body.items() if k != "intent"}
    assert _ask(without)["route"]["intent"] == classified
    # When it is sent with the explicit intent, by submit and by name
    for answer in (_ask(request_body), _ask_by_name(celery_app, request_body)):
        # Then the declared intent is the route's, and picks the model
        assert answer["route"]["intent"] == explicit
        assert "explicit intent" in answer["route"]["reason"]
        assert _first_hop(answer) == {"provider": provider, "model": model}
        assert (answer["provider"], answer["model"]) == (provider, model)
        assert _sent_model(healthy, provider) == model
