"""The Anthropic stand-in, driven by the real ``anthropic`` SDK."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from anthropic.types import Message

from aipool.simulator import Simulator

MODEL = "claude-sonnet-4-6"


@pytest.fixture
def client(sim: Simulator) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        api_key="test-key", base_url=sim.base_urls["anthropic"], max_retries=0, timeout=5
    ) as client:
        yield client


def anthropic_tools(tools: tuple[dict[str, Any], ...]) -> list[Any]:
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
        for t in tools
    ]


def ask(client: anthropic.Anthropic, text: str = "Hello there", max_tokens: int = 256) -> Message:
    return client.messages.create(
        model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": text}]
    )


def test_text_answer_names_the_model_and_reports_usage(client: anthropic.Anthropic) -> None:
    # Given a healthy simulator
    # When Claude is asked the same thing twice
    first, second = (
        client.messages.create(
            model=MODEL,
            max_tokens=256,
            system="You are terse.",
            messages=[{"role": "user", "content": "Explain circuit breakers"}],
        )
        for _ in range(2)
    )
    # Then it answers text naming provider and model, the same both times, with usage
    assert first.content[0].type == "text"
    assert first.content[0].text.startswith(f"[anthropic/{MODEL}] ")
    assert "circuit breakers" not in first.content[0].text
    assert first.content == second.content
    assert first.stop_reason == "end_turn"
    assert first.id.startswith("msg_")
    assert first.usage.input_tokens > 0
    assert first.usage.output_tokens > 0


def test_small_max_tokens_truncates_and_says_so(client: anthropic.Anthropic) -> None:
    # When the output limit is tiny
    message = ask(client, max_tokens=3)
    # Then the answer is cut and the stop reason is max_tokens
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens <= 3


def test_offered_tools_get_a_call_to_the_best_matching_tool(
    client: anthropic.Anthropic, tool_case: Any
) -> None:
    # When tools are offered and the user asks about the weather
    message = client.messages.create(
        model=MODEL,
        max_tokens=256,
        tools=anthropic_tools(tool_case.tools),
        messages=[{"role": "user", "content": tool_case.prompt}],
    )
    # Then Claude calls the weather tool with arguments built from its schema
    assert message.stop_reason == "tool_use"
    block = message.content[0]
    assert block.type == "tool_use"
    assert block.id.startswith("toolu_")
    assert block.name == tool_case.expected_name
    assert block.input == tool_case.expected_arguments


def test_a_tool_result_gets_a_text_answer_that_mentions_it(
    client: anthropic.Anthropic, tool_case: Any
) -> None:
    # Given a conversation whose last turn is a tool result
    message = client.messages.create(
        model=MODEL,
        max_tokens=256,
        tools=anthropic_tools(tool_case.tools),
        messages=[
            {"role": "user", "content": tool_case.prompt},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C and sunny"}
                ],
            },
        ],
    )
    # Then the answer is text that mentions the tool and its result
    assert message.stop_reason == "end_turn"
    block = message.content[0]
    assert block.type == "text"
    assert "get_weather" in block.text
    assert "18C and sunny" in block.text


def test_bearer_token_is_accepted_and_no_credentials_get_401(sim: Simulator) -> None:
    # Given a client that authenticates with a Bearer token
    with anthropic.Anthropic(
        auth_token="test-token", base_url=sim.base_urls["anthropic"], max_retries=0
    ) as client:
        # Then it gets an answer
        assert ask(client).content
    # And a request without credentials gets Anthropic's authentication error
    response = httpx.post(
        sim.base_urls["anthropic"] + "/v1/messages",
        json={"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_a_request_without_max_tokens_is_an_invalid_request(sim: Simulator) -> None:
    # When a request omits max_tokens, Then it is refused as Anthropic refuses it
    response = httpx.post(
        sim.base_urls["anthropic"] + "/v1/messages",
        headers={"x-api-key": "k"},
        json={"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
    )
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    }


def test_rate_limit_raises_rate_limit_error_with_retry_after(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    # Given a rate limit asking clients to wait 7 seconds (named the pool's way)
    sim.set_fault("claude", "rate_limit", retry_after=7)
    # When Claude is called, Then the SDK raises RateLimitError carrying Retry-After
    with pytest.raises(anthropic.RateLimitError) as caught:
        ask(client)
    assert caught.value.response.headers["retry-after"] == "7"
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize(
    ("kind", "error", "status", "error_type"),
    [
        ("error_500", anthropic.InternalServerError, 500, "api_error"),
        ("overloaded", anthropic.OverloadedError, 529, "overloaded_error"),
    ],
)
def test_server_faults_raise_the_sdk_status_errors(
    sim: Simulator,
    client: anthropic.Anthropic,
    kind: str,
    error: type[anthropic.APIStatusError],
    status: int,
    error_type: str,
) -> None:
    # Given a server-side fault
    sim.set_fault("anthropic", kind)
    # When Claude is called, Then the SDK raises its own error class for the status
    with pytest.raises(error) as caught:
        ask(client)
    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["type"] == error_type


def test_hang_times_out_the_client(sim: Simulator) -> None:
    # Given a provider that holds requests longer than the client waits
    sim.set_fault("anthropic", "hang", seconds=120)
    # Then the SDK times out on its own schedule, not the server's (which would answer in two
    # minutes)
    with (
        anthropic.Anthropic(
            api_key="k", base_url=sim.base_urls["anthropic"], max_retries=0, timeout=0.3
        ) as client,
        pytest.raises(anthropic.APITimeoutError),
    ):
        ask(client)


def test_down_refuses_connections_until_healed(sim: Simulator, client: anthropic.Anthropic) -> None:
    # Given a provider that has gone down
    base_url = sim.base_urls["anthropic"]
    sim.set_fault("anthropic", "down")
    # Then the SDK cannot connect and no call reaches the provider
    with pytest.raises(anthropic.APIConnectionError):
        ask(client)
    assert sim.calls("anthropic") == 0
    # When healed, Then it answers again on the same address
    sim.heal("anthropic")
    assert sim.base_urls["anthropic"] == base_url
    assert ask(client).content


def test_slow_answers_correctly_after_the_delay(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    # Given a slow provider
    sim.set_fault("anthropic", "slow", ms=200)
    # When called, Then the answer is correct and arrives after the delay
    started = time.monotonic()
    message = ask(client)
    assert time.monotonic() - started >= 0.2
    assert message.content[0].type == "text"
    assert message.content[0].text.startswith("[anthropic/")


def test_malformed_body_cannot_be_decoded(sim: Simulator, client: anthropic.Anthropic) -> None:
    # Given a provider answering 200 with a broken body, Then decoding it fails
    sim.set_fault("anthropic", "malformed")
    with pytest.raises(ValueError):
        ask(client)


@pytest.mark.parametrize("sampling", ["temperature", "top_p", "top_k"])
def test_sampling_parameters_are_refused_as_api_version_2026_10_21_does(
    client: anthropic.Anthropic, sampling: str
) -> None:
    # Given a request body that carries a sampling parameter, even at its default
    # When it is sent (the SDK 2.x no longer takes them: only extra_body can)
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(
            model=MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": "Hello"}],
            extra_body={sampling: 1.0},
        )
    # Then the simulator answers the API's 400, naming it
    assert raised.value.status_code == 400
    assert f"{sampling}: Extra inputs are not permitted" in str(raised.value)
