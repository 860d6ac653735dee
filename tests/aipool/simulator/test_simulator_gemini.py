"""The Gemini stand-in, driven by the real ``google-genai`` SDK."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors, types

from aipool.simulator import Simulator

MODEL = "gemini-2.5-flash"


def make_client(sim: Simulator, timeout_ms: int = 5000, api_version: str = "v1beta") -> Any:
    return genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(
            base_url=sim.base_urls["gemini"], api_version=api_version, timeout=timeout_ms
        ),
    )


@pytest.fixture
def client(sim: Simulator) -> Iterator[genai.Client]:
    with make_client(sim) as client:
        yield client


def gemini_tools(tools: tuple[dict[str, Any], ...]) -> list[Any]:
    return [
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name=tool["name"],
                    description=tool["description"],
                    parameters_json_schema=tool["parameters"],
                )
                for tool in tools
            ]
        )
    ]


@pytest.mark.parametrize("api_version", ["v1beta", "v1"])
def test_text_answer_names_the_model_and_reports_usage(sim: Simulator, api_version: str) -> None:
    # Given a client on either API version
    with make_client(sim, api_version=api_version) as client:
        # When Gemini is asked the same thing twice
        first = client.models.generate_content(model=MODEL, contents="Explain retries")
        second = client.models.generate_content(model=MODEL, contents="Explain retries")
    # Then it answers text naming provider and model, deterministically, with usage
    assert first.text is not None
    assert first.text.startswith(f"[gemini/{MODEL}] ")
    assert first.text == second.text
    assert first.candidates is not None
    assert first.candidates[0].finish_reason == types.FinishReason.STOP
    usage = first.usage_metadata
    assert usage is not None
    assert usage.prompt_token_count and usage.candidates_token_count
    # Gemini 2.5 Flash thinks by default: its thoughts are counted outside the candidates
    assert usage.thoughts_token_count
    assert usage.total_token_count == (
        usage.prompt_token_count + usage.candidates_token_count + usage.thoughts_token_count
    )


def test_system_instruction_and_output_limit_are_honoured(client: genai.Client) -> None:
    # When the output limit is tiny
    response = client.models.generate_content(
        model=MODEL,
        contents="Hello",
        config=types.GenerateContentConfig(system_instruction="Be brief", max_output_tokens=3),
    )
    # Then the answer is cut with finish reason MAX_TOKENS
    assert response.candidates is not None
    assert response.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert response.usage_metadata is not None
    assert (response.usage_metadata.candidates_token_count or 0) <= 3


def test_offered_tools_get_a_function_call(client: genai.Client, tool_case: Any) -> None:
    # When tools are offered and the user asks about the weather
    response = client.models.generate_content(
        model=MODEL,
        contents=tool_case.prompt,
        config=types.GenerateContentConfig(tools=gemini_tools(tool_case.tools)),
    )
    # Then Gemini calls the weather tool with arguments built from its schema
    assert response.function_calls is not None
    call = response.function_calls[0]
    assert call.name == tool_case.expected_name
    assert call.args == tool_case.expected_arguments


def test_a_function_response_gets_a_text_answer_that_mentions_it(
    client: genai.Client, tool_case: Any
) -> None:
    # Given a conversation whose last turn is a function response
    contents = [
        types.Content(role="user", parts=[types.Part(text=tool_case.prompt)]),
        types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(name="get_weather", args={}))],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        name="get_weather", response={"result": "18C and sunny"}
                    )
                )
            ],
        ),
    ]
    response = client.models.generate_content(
        model=MODEL,
        contents=contents,
        config=types.GenerateContentConfig(tools=gemini_tools(tool_case.tools)),
    )
    # Then the text mentions the tool and its result
    assert response.text is not None
    assert "get_weather" in response.text
    assert "18C and sunny" in response.text


def test_key_in_query_is_accepted_and_no_key_is_refused(sim: Simulator) -> None:
    url = f"{sim.base_urls['gemini']}/v1beta/models/{MODEL}:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    # Given the key in ?key=, Then the call is answered
    assert httpx.post(url, params={"key": "k"}, json=body).status_code == 200
    # Given no key, Then Google's permission error comes back
    refused = httpx.post(url, json=body)
    assert refused.status_code == 403
    assert refused.json()["error"]["status"] == "PERMISSION_DENIED"


@pytest.mark.parametrize(
    ("kind", "error", "code", "status"),
    [
        ("rate_limit", errors.ClientError, 429, "RESOURCE_EXHAUSTED"),
        ("error_500", errors.ServerError, 500, "INTERNAL"),
        ("overloaded", errors.ServerError, 503, "UNAVAILABLE"),
    ],
)
def test_status_faults_raise_the_sdk_errors(
    sim: Simulator,
    client: genai.Client,
    kind: str,
    error: type[errors.APIError],
    code: int,
    status: str,
) -> None:
    # Given a fault, When Gemini is called, Then the SDK raises its error with code and status
    sim.set_fault("gemini", kind)
    with pytest.raises(error) as caught:
        client.models.generate_content(model=MODEL, contents="hi")
    assert caught.value.code == code
    assert caught.value.status == status


def test_hang_times_out_the_client(sim: Simulator) -> None:
    sim.set_fault("gemini", "hang", seconds=5)
    with make_client(sim, timeout_ms=300) as client, pytest.raises(httpx2.ReadTimeout):
        client.models.generate_content(model=MODEL, contents="hi")


def test_down_refuses_connections(sim: Simulator, client: genai.Client) -> None:
    sim.set_fault("gemini", "down")
    with pytest.raises(httpx2.ConnectError):
        client.models.generate_content(model=MODEL, contents="hi")
    sim.heal("gemini")
    assert client.models.generate_content(model=MODEL, contents="hi").text


def test_slow_answers_after_the_delay(sim: Simulator, client: genai.Client) -> None:
    sim.set_fault("gemini", "slow", ms=150)
    started = time.monotonic()
    assert client.models.generate_content(model=MODEL, contents="hi").text
    assert time.monotonic() - started >= 0.15


def test_malformed_body_cannot_be_decoded(sim: Simulator, client: genai.Client) -> None:
    sim.set_fault("gemini", "malformed")
    with pytest.raises(ValueError):
        client.models.generate_content(model=MODEL, contents="hi")
