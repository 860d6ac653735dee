"""Faults of providers that answer, but wrongly: echoed keys, missing or absurd usage, bad tool calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aipool.simulator import InvalidFault, Simulator

KEY = "planted-key-0123456789"
TOOL_PARAMETERS = {
    "type": "object",
    "properties": {"pod": {"type": "string"}},
    "required": ["pod"],
}


def _path_and_body(kind: str, text: str, *, tools: bool = False) -> tuple[str, dict[str, Any]]:
    """The inference path and a minimal body in ``kind``'s own format."""
    if kind == "ollama":
        body: dict[str, Any] = {
            "model": "m",
            "stream": False,
            "messages": [{"role": "user", "content": text}],
        }
        if tools:
            body["tools"] = [
                {"type": "function", "function": {"name": "logs", "parameters": TOOL_PARAMETERS}}
            ]
        return "/api/chat", body
    if kind == "gemini":
        body = {"contents": [{"role": "user", "parts": [{"text": text}]}]}
        if tools:
            body["tools"] = [
                {"functionDeclarations": [{"name": "logs", "parameters": TOOL_PARAMETERS}]}
            ]
        return "/v1beta/models/m:generateContent", body
    if kind == "anthropic":
        body = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": text}]}
        if tools:
            body["tools"] = [{"name": "logs", "input_schema": TOOL_PARAMETERS}]
        return "/v1/messages", body
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    if tools:
        body["tools"] = [
            {"type": "function", "function": {"name": "logs", "parameters": TOOL_PARAMETERS}}
        ]
    return "/v1/chat/completions", body


#: Where each client puts its key: (provider kind, headers, query parameters).
CREDENTIALS = [
    ("ollama", {"Authorization": f"Bearer {KEY}"}, {}),
    ("gemini", {"x-goog-api-key": KEY}, {}),
    ("gemini", {}, {"key": KEY}),
    ("anthropic", {"x-api-key": KEY}, {}),
    ("anthropic", {"Authorization": f"Bearer {KEY}"}, {}),
    ("openai", {"Authorization": f"Bearer {KEY}"}, {}),
]
KINDS = ("ollama", "gemini", "anthropic", "openai")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as client:
        yield client


def _post(
    http: httpx.Client,
    sim: Simulator,
    kind: str,
    *,
    text: str = "Why is the api slow?",
    tools: bool = False,
    headers: dict[str, str] | None = None,
    params: dict[str, str] | None = None,
) -> httpx.Response:
    path, body = _path_and_body(kind, text, tools=tools)
    root = sim.base_urls[kind].removesuffix("/v1")
    # json.dumps escapes non-ASCII (a lone surrogate becomes \ud800), as google-genai sends it.
    return http.post(
        root + path,
        content=json.dumps(body),
        headers={
            "Content-Type": "application/json",
            **(headers if headers is not None else {"Authorization": f"Bearer {KEY}"}),
        },
        params=params or {},
    )


@pytest.mark.parametrize(("kind", "headers", "params"), CREDENTIALS)
def test_echo_key_answers_an_error_repeating_the_key_the_request_carried(
    sim: Simulator,
    http: httpx.Client,
    kind: str,
    headers: dict[str, str],
    params: dict[str, str],
) -> None:
    # Given a provider that echoes credentials in its errors
    sim.set_fault(kind, "echo_key")
    # When a request carries its key where that provider's clients put it
    response = _post(http, sim, kind, headers=headers, params=params)
    # Then the answer is a 401 in the provider's own error format, and it holds the key
    assert response.status_code == 401
    assert KEY in response.text
    json.loads(response.text)


def test_echo_key_takes_the_status_to_answer_with(sim: Simulator, http: httpx.Client) -> None:
    sim.set_fault("gemini", "echo_key", status=500)
    response = _post(http, sim, "gemini", headers={"x-goog-api-key": KEY})
    assert response.status_code == 500
    assert response.json()["error"]["status"] == "INTERNAL"
    assert KEY in response.json()["error"]["message"]


_USAGE_FIELDS = {
    "ollama": ("prompt_eval_count", "eval_count"),
    "gemini": ("usageMetadata",),
    "anthropic": ("usage",),
    "openai": ("usage",),
}


@pytest.mark.parametrize("kind", KINDS)
def test_no_usage_answers_without_any_usage_field(
    sim: Simulator, http: httpx.Client, kind: str
) -> None:
    healthy = _post(http, sim, kind).json()
    sim.set_fault(kind, "no_usage")
    faulted = _post(http, sim, kind).json()
    for name in _USAGE_FIELDS[kind]:
        assert name in healthy
        assert name not in faulted


def _usage(kind: str, body: dict[str, Any]) -> tuple[int, int]:
    if kind == "ollama":
        return body["prompt_eval_count"], body["eval_count"]
    if kind == "gemini":
        meta = body["usageMetadata"]
        return meta["promptTokenCount"], meta["candidatesTokenCount"]
    if kind == "anthropic":
        return body["usage"]["input_tokens"], body["usage"]["output_tokens"]
    return body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_usage_reports_the_counts_it_was_given(
    sim: Simulator, http: httpx.Client, kind: str
) -> None:
    sim.set_fault(kind, "bad_usage", input_tokens=20_000_000)
    assert _usage(kind, _post(http, sim, kind).json())[0] == 20_000_000
    sim.set_fault(kind, "bad_usage")
    assert _usage(kind, _post(http, sim, kind).json())[1] == -1


def _first_call(kind: str, body: dict[str, Any]) -> tuple[str, Any]:
    """The name and the arguments of the first tool call in ``kind``'s answer ``body``."""
    if kind == "ollama":
        function = body["message"]["tool_calls"][0]["function"]
        return function["name"], function["arguments"]
    if kind == "gemini":
        call = body["candidates"][0]["content"]["parts"][0]["functionCall"]
        return call["name"], call["args"]
    if kind == "anthropic":
        block = body["content"][0]
        return block["name"], block["input"]
    function = body["choices"][0]["message"]["tool_calls"][0]["function"]
    return function["name"], function["arguments"]


def _faulted_call(sim: Simulator, http: httpx.Client, kind: str, fault: str) -> tuple[str, Any]:
    """The first call ``kind``'s model makes, under ``fault``, to a request offering "logs"."""
    sim.set_fault(kind, fault)
    return _first_call(kind, _post(http, sim, kind, tools=True).json())


@pytest.mark.parametrize("kind", KINDS)
def test_bad_tool_args_sends_arguments_that_are_no_json_object(
    sim: Simulator, http: httpx.Client, kind: str
) -> None:
    # Given a provider whose tool calls carry broken arguments, when a request offers a tool
    _, arguments = _faulted_call(sim, http, kind, "bad_tool_args")
    # Then the arguments are text that does not parse as JSON
    assert isinstance(arguments, str)
    with pytest.raises(ValueError):
        json.loads(arguments)


def test_malformed_call_at_gemini_is_its_malformed_function_call_stop(
    sim: Simulator, http: httpx.Client
) -> None:
    # Given Gemini's model writing a call Google cannot parse
    sim.set_fault("gemini", "malformed_call")
    # When a request offers a tool
    body = _post(http, sim, "gemini", tools=True).json()
    # Then the candidate has no content, the reason, and the call quoted in finishMessage (as
    # python-genai's users report it); only the prompt is counted
    (candidate,) = body["candidates"]
    assert "content" not in candidate
    assert candidate["finishReason"] == "MALFORMED_FUNCTION_CALL"
    assert candidate["finishMessage"].startswith("Malformed function call: ")
    usage = body["usageMetadata"]
    assert "candidatesTokenCount" not in usage and "thoughtsTokenCount" not in usage
    assert usage["totalTokenCount"] == usage["promptTokenCount"]
    # and a request without tools gets its answer
    assert _post(http, sim, "gemini").json()["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize(
    ("kind", "parses"), [("openai", False), ("anthropic", True), ("ollama", True)]
)
def test_malformed_call_elsewhere_is_the_nearest_answer_each_has(
    sim: Simulator, http: httpx.Client, kind: str, parses: bool
) -> None:
    # OpenAI-compatible servers pass the model's text on: arguments that are no JSON object;
    # Anthropic and Ollama document no such answer and answer as usual
    _, arguments = _faulted_call(sim, http, kind, "malformed_call")
    if parses:
        assert isinstance(arguments, dict)
    else:
        with pytest.raises(ValueError):
            json.loads(arguments)


@pytest.mark.parametrize("tools", [True, False], ids=["tools-offered", "none-offered"])
@pytest.mark.parametrize("kind", KINDS)
def test_unknown_tool_calls_a_function_the_request_did_not_declare(
    sim: Simulator, http: httpx.Client, kind: str, tools: bool
) -> None:
    # Given a model that calls a function it was not offered
    sim.set_fault(kind, "unknown_tool")
    # When a request offers one tool, "logs", or none
    body = _post(http, sim, kind, tools=tools).json()
    # Then the call names another
    name, _ = _first_call(kind, body)
    assert name not in ("logs", "")
    if kind == "gemini":
        # and Google says so itself, naming it (its documented UNEXPECTED_TOOL_CALL body)
        (candidate,) = body["candidates"]
        assert candidate["finishReason"] == "UNEXPECTED_TOOL_CALL"
        assert candidate["finishMessage"].endswith(name)


@pytest.mark.parametrize("kind", KINDS)
def test_missing_argument_leaves_out_what_the_function_requires(
    sim: Simulator, http: httpx.Client, kind: str
) -> None:
    # Given a model that leaves out a required argument ("pod" is the tool's only one), when a
    # request offers the tool, then the call comes as the model wrote it, without it
    name, arguments = _faulted_call(sim, http, kind, "missing_argument")
    if kind == "openai":
        arguments = json.loads(arguments)
    assert name == "logs" and "pod" not in arguments


@pytest.mark.parametrize(
    ("kind", "opening"), [("openai", "<TOOLCALL>[{"), ("ollama", " <toolcall> {")]
)
def test_unparsed_call_sends_the_call_as_text_where_a_server_passes_it_on(
    sim: Simulator, http: httpx.Client, kind: str, opening: str
) -> None:
    # Given a server whose tool-call parser does not read the model's form, when a request
    # offers a tool
    sim.set_fault(kind, "unparsed_call")
    body = _post(http, sim, kind, tools=True).json()
    # Then the call is the answer's text, in the model's own format, and no call comes
    message = body["message"] if kind == "ollama" else body["choices"][0]["message"]
    assert message["content"].startswith(opening) and '"logs"' in message["content"]
    assert not message.get("tool_calls")
    if kind == "openai":
        assert body["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("kind", ["gemini", "anthropic"])
def test_unparsed_call_leaves_servers_that_parse_calls_themselves_as_usual(
    sim: Simulator, http: httpx.Client, kind: str
) -> None:
    name, _ = _faulted_call(sim, http, kind, "unparsed_call")
    assert name == "logs"


@pytest.mark.parametrize("kind", KINDS)
def test_text_with_an_unpaired_surrogate_is_refused_as_a_bad_request(
    sim: Simulator, http: httpx.Client, kind: str
) -> None:
    # JSON can carry a lone surrogate escaped (\ud800); providers refuse it, the server survives.
    response = _post(http, sim, kind, text="broken \ud800 text")
    assert response.status_code == 400
    assert _post(http, sim, kind).status_code == 200


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("echo_key", {"status": 200}),
        ("echo_key", {"seconds": 1}),
        ("bad_usage", {"input_tokens": "many"}),
        ("bad_usage", {"output_tokens": 1.5}),
        ("no_usage", {"status": 500}),
    ],
)
def test_bad_options_of_the_new_faults_are_refused(
    sim: Simulator, kind: str, options: dict[str, Any]
) -> None:
    with pytest.raises(InvalidFault):
        sim.set_fault("claude", kind, **options)
