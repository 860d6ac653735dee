"""ai.generate end to end: real worker processes, simulated providers over the real SDKs.

Every test runs on both brokers (the ``broker`` fixture): Redis, and RabbitMQ with results and pool
state in Redis.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tasks.client import submit
from tests.support.rabbitmq import BrokerUnderTest

pytestmark = pytest.mark.integration

WEATHER_TOOL = {
    "name": "restart_deployment",
    "description": "Restart a Kubernetes deployment",
    "parameters": {
        "type": "object",
        "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
        "required": ["namespace", "name"],
    },
}
TIMEOUT = 30


@pytest.fixture(autouse=True)
def _fresh(healthy, clean_redis, broker):  # type: ignore[no-untyped-def]
    """Every test starts with healthy providers, closed breakers and empty quotas, and runs once
    on each broker."""


def _ask(broker: BrokerUnderTest, request: dict[str, Any], **options: Any) -> dict[str, Any]:
    async_result = submit(request, app=broker.app, **options)
    answer = async_result.get(timeout=TIMEOUT)
    assert answer["request_id"] == async_result.id
    return answer


def _trail(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["provider"], a["outcome"]) for a in answer["attempts"]]


def test_a_simple_request_is_answered_by_ollama(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    # Given healthy providers / When a service asks a simple question
    answer = _ask(broker, {"prompt": "What is a pod?", "user_id": "u-1"})
    # Then the local model answers it, and only it was called
    assert answer["status"] == "ok"
    assert answer["provider"] == "ollama"
    assert answer["content"]
    assert answer["usage"]["input_tokens"] > 0 and answer["usage"]["output_tokens"] > 0
    assert _trail(answer) == [("ollama", "ok")]
    assert healthy.calls("ollama") == 1
    assert healthy.calls("gemini") == 0


def test_ollama_down_falls_back_to_gemini_with_both_attempts(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "down")
    answer = _ask(broker, {"prompt": "What is a pod?"})
    assert answer["status"] == "ok"
    assert answer["provider"] == "gemini"
    assert _trail(answer) == [("ollama", "error"), ("gemini", "ok")]
    assert answer["attempts"][0]["error"].startswith("unreachable")


def test_ollama_and_gemini_failing_falls_back_to_claude(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "error_500")
    healthy.set_fault("gemini", "rate_limit", retry_after=5)
    answer = _ask(broker, {"prompt": "What is a pod?"})
    assert answer["provider"] == "claude"
    assert _trail(answer) == [("ollama", "error"), ("gemini", "error"), ("claude", "ok")]
    assert answer["attempts"][0]["error"].startswith("server_error")
    assert answer["attempts"][1]["error"].startswith("rate_limited")


def test_all_providers_down_gives_the_static_answer(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    for provider in ("ollama", "gemini", "claude"):
        healthy.set_fault(provider, "down")
    answer = _ask(broker, {"prompt": "What is a pod?"})
    assert answer["status"] == "fallback"
    assert answer["content"] == "抱歉，AI 服務暫時不可用。請稍後再試，或聯繫管理員。"
    assert _trail(answer) == [
        ("ollama", "error"),
        ("gemini", "error"),
        ("claude", "error"),
        ("static", "fallback"),
    ]


def test_a_hanging_provider_times_out_and_the_next_answers(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "hang", seconds=10)
    answer = _ask(broker, {"prompt": "What is a pod?"})
    assert answer["provider"] == "gemini"
    assert answer["attempts"][0]["error"].startswith("timeout")


def test_a_malformed_answer_is_classified_and_skipped(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "malformed")
    answer = _ask(broker, {"prompt": "What is a pod?"})
    assert answer["provider"] == "gemini"
    assert answer["attempts"][0]["error"].startswith("bad_response")


def test_a_tool_call_is_answered_by_nemotron(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    answer = _ask(broker, {"prompt": "Restart the api deployment in prod", "tools": [WEATHER_TOOL]})
    assert answer["status"] == "ok"
    assert answer["provider"] == "nemotron"
    assert [c["name"] for c in answer["tool_calls"]] == ["restart_deployment"]
    assert set(answer["tool_calls"][0]["arguments"]) >= {"namespace", "name"}
    # the tool reached NVIDIA's API in OpenAI's format
    sent = healthy.last_requests("nemotron")[-1]
    assert sent["tools"][0]["function"]["name"] == "restart_deployment"


def test_nemotron_down_sends_the_tool_call_to_gemini_translated(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("nemotron", "down")
    answer = _ask(broker, {"prompt": "Restart the api deployment in prod", "tools": [WEATHER_TOOL]})
    assert answer["provider"] == "gemini"
    assert _trail(answer) == [("nemotron", "error"), ("gemini", "ok")]
    assert answer["tool_calls"][0]["name"] == "restart_deployment"
    assert isinstance(answer["tool_calls"][0]["arguments"], dict)
    sent = healthy.last_requests("gemini")[-1]
    declared = sent["tools"][0]["functionDeclarations"][0]
    assert declared["name"] == "restart_deployment"


def test_a_tool_conversation_continues_on_claude_after_two_failures(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    # Given a conversation where an earlier model (Ollama-style, no call ids) ran a tool
    healthy.set_fault("nemotron", "error_500")
    healthy.set_fault("gemini", "overloaded")
    request = {
        "messages": [
            {"role": "user", "content": "Restart api in prod"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "name": "restart_deployment",
                        "arguments": {"namespace": "prod", "name": "api"},
                    }
                ],
            },
            {
                "role": "tool",
                "name": "restart_deployment",
                "content": json.dumps({"restarted": True}),
            },
        ],
        "tools": [WEATHER_TOOL],
    }
    answer = _ask(broker, request)
    assert answer["provider"] == "claude"
    sent = healthy.last_requests("claude")[-1]
    use = sent["messages"][1]["content"][0]
    result = sent["messages"][2]["content"][0]
    assert use["type"] == "tool_use" and result["type"] == "tool_result"
    assert result["tool_use_id"] == use["id"]


def test_all_tool_providers_down_refuses(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    for provider in ("nemotron", "gemini", "claude"):
        healthy.set_fault(provider, "down")
    answer = _ask(broker, {"prompt": "Restart the api deployment", "tools": [WEATHER_TOOL]})
    assert answer["status"] == "refused"
    assert answer["tool_calls"] == []
    assert _trail(answer)[-1] == ("refuse", "refused")


def test_a_passed_deadline_skips_every_model(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "slow", ms=300)
    answer = _ask(broker, {"prompt": "What is a pod?", "deadline_s": 0.001})
    # no provider could answer within the deadline: the chain's end says so (issue #42)
    assert answer["status"] == "fallback", answer
    assert {a["outcome"] for a in answer["attempts"]} == {"deadline", "fallback"}
    assert healthy.calls("ollama") == 0


@pytest.mark.parametrize(
    ("request_body", "code"),
    [
        ({}, "missing_messages"),
        ({"messages": []}, "missing_messages"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "unknown_role"),
        ({"messages": "hi"}, "missing_messages"),
        ({"prompt": 42}, "invalid_prompt"),
        ({"prompt": "x" * 200_000}, "prompt_too_large"),
        ({"prompt": "hi", "tools": [{"name": "t"}]}, "tool_without_schema"),
        ({"prompt": "hi", "max_tokens": "many"}, "invalid_max_tokens"),
        ("just a string", "invalid_request"),
        # misspelt, it used to be answered by Ollama as if it were absent
        ({"prompt": "Production is down", "prioirty": "critical"}, "unknown_field"),
    ],
)
def test_bad_input_comes_back_as_a_structured_error(broker, healthy, request_body, code) -> None:  # type: ignore[no-untyped-def]
    # When a producer sends a malformed request by name, as a non-Python service would
    async_result = broker.app.send_task("ai.generate", kwargs={"request": request_body})
    answer = async_result.get(timeout=TIMEOUT)
    # Then it gets a clear error, and no provider was called
    assert answer["status"] == "error"
    assert answer["error"]["code"] == code
    assert answer["error"]["message"]
    assert answer["request_id"] == async_result.id
    assert sum(healthy.calls(p) for p in ("ollama", "gemini", "claude", "nemotron")) == 0


def test_a_producer_that_imports_only_celery_gets_the_answer(healthy, broker) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import TEST_REDIS_URL

    # Given a producer with Celery's default settings that names only the task and the queue
    # (on RabbitMQ it declares ``router`` without a queue type: the quorum queue must accept it)
    script = textwrap.dedent(
        f"""
        import json, sys
        from celery import Celery
        app = Celery(broker={broker.url!r}, backend={TEST_REDIS_URL!r})
        result = app.send_task(
            "ai.generate",
            kwargs={{"request": {{"prompt": "Hello from another service", "user_id": "svc-7"}}}},
            queue="router",
        )
        answer = result.get(timeout=30)
        assert "aipool" not in sys.modules and "workers" not in sys.modules
        print(json.dumps({{"id": result.id, "answer": answer}}))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["answer"]["status"] == "ok"
    assert data["answer"]["provider"] == "ollama"
    assert data["answer"]["request_id"] == data["id"]
    assert data["answer"]["route"]["chain"][0]["provider"] == "ollama"
