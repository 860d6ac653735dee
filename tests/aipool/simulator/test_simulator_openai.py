"""The OpenAI-compatible stand-in (NVIDIA Nemotron's API), driven by the real ``openai`` SDK."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion

from aipool.simulator import Simulator

MODEL = "nvidia/llama-3.3-nemotron-super-49b-v1"


@pytest.fixture
def client(sim: Simulator) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        api_key="test-key", base_url=sim.base_urls["openai"], max_retries=0, timeout=5
    ) as client:
        yield client


def openai_tools(tools: tuple[dict[str, Any], ...]) -> list[Any]:
    return [{"type": "function", "function": tool} for tool in tools]


def ask(client: openai.OpenAI, text: str = "Hello there", max_tokens: int = 256) -> ChatCompletion:
    return client.chat.completions.create(
        model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": text}]
    )


def test_text_answer_names_the_model_and_reports_usage(client: openai.OpenAI) -> None:
    # When Nemotron is asked the same thing twice
    first = ask(client, "Summarise the incident")
    second = ask(client, "Summarise the incident")
    # Then it answers text naming provider and model, deterministically, with usage
    content = first.choices[0].message.content
    assert content is not None
    assert content.startswith(f"[openai/{MODEL}] ")
    assert content == second.choices[0].message.content
    assert first.choices[0].finish_reason == "stop"
    assert first.id.startswith("chatcmpl-")
    assert first.usage is not None
    assert first.usage.prompt_tokens > 0
    assert first.usage.completion_tokens > 0
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens


def test_small_max_tokens_truncates_with_finish_reason_length(client: openai.OpenAI) -> None:
    completion = ask(client, max_tokens=4)
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage is not None
    assert completion.usage.completion_tokens <= 4


def test_offered_tools_get_a_tool_call_with_json_string_arguments(
    client: openai.OpenAI, tool_case: Any
) -> None:
    # When tools are offered and the user asks about the weather
    completion = client.chat.completions.create(
        model=MODEL,
        tools=openai_tools(tool_case.tools),
        messages=[{"role": "user", "content": tool_case.prompt}],
    )
    # Then the answer is a call to the weather tool, arguments as a JSON string
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name == tool_case.expected_name
    assert json.loads(call.function.arguments) == tool_case.expected_arguments


def test_a_tool_result_gets_a_text_answer_that_mentions_it(
    client: openai.OpenAI, tool_case: Any
) -> None:
    # Given a conversation whose last turn is a tool result
    completion = client.chat.completions.create(
        model=MODEL,
        tools=openai_tools(tool_case.tools),
        messages=[
            {"role": "user", "content": tool_case.prompt},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"},
        ],
    )
    # Then the text mentions the tool and its result
    content = completion.choices[0].message.content
    assert content is not None
    assert "get_weather" in content
    assert "18C and sunny" in content


def test_missing_bearer_token_gets_401(sim: Simulator) -> None:
    response = httpx.post(
        sim.base_urls["openai"] + "/chat/completions",
        json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize(
    ("kind", "error", "status"),
    [
        ("rate_limit", openai.RateLimitError, 429),
        ("error_500", openai.InternalServerError, 500),
        ("overloaded", openai.InternalServerError, 503),
    ],
)
def test_status_faults_raise_the_sdk_status_errors(
    sim: Simulator,
    client: openai.OpenAI,
    kind: str,
    error: type[openai.APIStatusError],
    status: int,
) -> None:
    # Given a fault (named the pool's way), When Nemotron is called, Then the SDK error matches
    sim.set_fault("nemotron", kind)
    with pytest.raises(error) as caught:
        ask(client)
    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict)
    assert "message" in caught.value.body
    if kind == "rate_limit":
        assert caught.value.response.headers["retry-after"] == "1"


def test_hang_times_out_the_client(sim: Simulator) -> None:
    sim.set_fault("openai", "hang", seconds=5)
    with (
        openai.OpenAI(
            api_key="k", base_url=sim.base_urls["openai"], max_retries=0, timeout=0.3
        ) as client,
        pytest.raises(openai.APITimeoutError),
    ):
        ask(client)


def test_down_raises_connection_error(sim: Simulator, client: openai.OpenAI) -> None:
    sim.set_fault("openai", "down")
    with pytest.raises(openai.APIConnectionError):
        ask(client)
    sim.heal("openai")
    assert ask(client).choices


def test_slow_answers_after_the_delay(sim: Simulator, client: openai.OpenAI) -> None:
    sim.set_fault("openai", "slow", ms=150)
    started = time.monotonic()
    assert ask(client).choices[0].finish_reason == "stop"
    assert time.monotonic() - started >= 0.15


def test_malformed_body_cannot_be_decoded(sim: Simulator, client: openai.OpenAI) -> None:
    sim.set_fault("openai", "malformed")
    with pytest.raises(ValueError):
        ask(client)
