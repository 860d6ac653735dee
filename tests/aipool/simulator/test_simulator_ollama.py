"""The Ollama stand-in, driven by the real ``ollama`` SDK."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import pytest

from aipool.simulator import Simulator

MODEL = "llama3.2:3b"


@pytest.fixture
def client(sim: Simulator) -> Iterator[ollama.Client]:
    with ollama.Client(host=sim.base_urls["ollama"], timeout=5) as client:
        yield client


def ask(client: ollama.Client, text: str = "Hello there", **options: Any) -> ollama.ChatResponse:
    return client.chat(
        model=MODEL, messages=[{"role": "user", "content": text}], options=options or None
    )


def test_text_answer_names_the_model_and_reports_usage(client: ollama.Client) -> None:
    # When the local model is asked the same thing twice
    first = ask(client, "Why is the sky blue?")
    second = ask(client, "Why is the sky blue?")
    # Then it answers text naming provider and model, deterministically, with counts and timings
    assert first.message.content is not None
    assert first.message.content.startswith(f"[ollama/{MODEL}] ")
    assert first.message.content == second.message.content
    assert first.done is True
    assert first.done_reason == "stop"
    assert first.prompt_eval_count and first.eval_count
    assert first.total_duration and first.eval_duration


def test_num_predict_truncates_with_done_reason_length(client: ollama.Client) -> None:
    response = ask(client, num_predict=3)
    assert response.done_reason == "length"
    assert (response.eval_count or 0) <= 3


def test_offered_tools_get_a_tool_call_with_object_arguments(
    client: ollama.Client, tool_case: Any
) -> None:
    # When tools are offered and the user asks about the weather
    response = client.chat(
        model=MODEL,
        messages=[{"role": "user", "content": tool_case.prompt}],
        tools=[{"type": "function", "function": tool} for tool in tool_case.tools],
    )
    # Then the model calls the weather tool with arguments as an object
    assert response.message.tool_calls is not None
    call = response.message.tool_calls[0]
    assert call.function.name == tool_case.expected_name
    assert dict(call.function.arguments) == tool_case.expected_arguments


def test_a_tool_result_gets_a_text_answer_that_mentions_it(
    client: ollama.Client, tool_case: Any
) -> None:
    response = client.chat(
        model=MODEL,
        messages=[
            {"role": "user", "content": tool_case.prompt},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "get_weather", "arguments": {}}}],
            },
            {"role": "tool", "content": "18C and sunny", "tool_name": "get_weather"},
        ],
        tools=[{"type": "function", "function": tool} for tool in tool_case.tools],
    )
    assert response.message.tool_calls is None
    assert response.message.content is not None
    assert "get_weather" in response.message.content
    assert "18C and sunny" in response.message.content


def test_health_probes_answer_and_are_not_counted_as_calls(
    sim: Simulator, client: ollama.Client
) -> None:
    # When the cheap endpoints are probed
    models = client.list()
    version = httpx.get(sim.base_urls["ollama"] + "/api/version").json()
    # Then they answer, and only inference calls count as calls
    assert [model.model for model in models.models] == ["llama3.2:3b", "qwen2.5:7b-instruct"]
    assert version["version"]
    assert sim.calls("ollama") == 0
    assert sim.state()["providers"]["ollama"]["probes"] == 2


@pytest.mark.parametrize(("kind", "status"), [("rate_limit", 429), ("error_500", 500)])
def test_status_faults_raise_response_error(
    sim: Simulator, client: ollama.Client, kind: str, status: int
) -> None:
    # Given a fault, When the model is called, Then ollama raises ResponseError with the status
    sim.set_fault("ollama", kind)
    with pytest.raises(ollama.ResponseError) as caught:
        ask(client)
    assert caught.value.status_code == status
    assert "simulated fault" in caught.value.error


def test_overloaded_is_a_503_as_ollama_sends_when_busy(
    sim: Simulator, client: ollama.Client
) -> None:
    sim.set_fault("ollama", "overloaded")
    with pytest.raises(ollama.ResponseError) as caught:
        ask(client)
    assert caught.value.status_code == 503


def test_hang_times_out_the_client(sim: Simulator) -> None:
    sim.set_fault("ollama", "hang", seconds=5)
    with (
        ollama.Client(host=sim.base_urls["ollama"], timeout=0.3) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        ask(client)


def test_down_raises_connection_error(sim: Simulator, client: ollama.Client) -> None:
    # Given a client holding a pooled connection, When the server goes down
    assert ask(client).done
    sim.set_fault("ollama", "down")
    # Then even the pooled connection is gone: the SDK reports it cannot connect
    with pytest.raises(ConnectionError):
        ask(client)
    sim.heal("ollama")
    assert ask(client).done


def test_slow_answers_after_the_delay(sim: Simulator, client: ollama.Client) -> None:
    sim.set_fault("ollama", "slow", ms=150)
    started = time.monotonic()
    assert ask(client).done
    assert time.monotonic() - started >= 0.15


@pytest.mark.parametrize("body", ["json", "schema"])
def test_malformed_bodies_fail_to_parse(sim: Simulator, client: ollama.Client, body: str) -> None:
    # Given broken JSON or JSON of the wrong shape, Then the SDK fails to read the answer
    sim.set_fault("ollama", "malformed", body=body)
    with pytest.raises(ValueError):
        ask(client)
