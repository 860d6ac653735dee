"""The producer contract as JSON Schema: committed, printed by ``aipool schema``, checked the way a
foreign producer would check it (``jsonschema``), and in agreement with the workers' parser."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from aipool.cli import run
from aipool.contract import result
from aipool.contract.completion import Completion, ToolCall
from aipool.contract.journey import Attempt, Journey
from aipool.contract.request import parse_request
from aipool.contract.route import Hop, Route
from aipool.contract.schema import DRAFT, schema_text
from aipool.errors import InvalidRequest

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = ROOT / "docs" / "contract.schema.json"
README = (ROOT / "README.md").read_text(encoding="utf-8")

#: The README's example requests in Python code, as written there.
README_PYTHON_REQUESTS = [
    {"prompt": "為什麼 payment-api 一直 CrashLoopBackOff？", "user_id": "svc-7"},
    {"messages": [{"role": "user", "content": "Summarise this incident"}]},
]


def _readme_json_requests() -> list[Any]:
    """The ```json blocks of the README's Request section: example requests for producers in any
    language."""
    section = README.split("### Request", 1)[1].split("### Result", 1)[0]
    blocks = section.split("```json\n")[1:]
    return [json.loads(block.split("```", 1)[0]) for block in blocks]


#: Requests both the schema and the workers refuse, each with the workers' error code.
MALFORMED = [
    ({}, "missing_messages"),
    ({"messages": []}, "missing_messages"),
    ({"messages": [{"role": "system", "content": "be brief"}]}, "missing_messages"),
    ({"prompt": "hi", "messages": [{"role": "user", "content": "hi"}]}, "ambiguous_input"),
    ({"prompt": "   "}, "invalid_prompt"),
    ({"prompt": 42}, "invalid_prompt"),
    ({"prompt": "a\x00b"}, "invalid_text"),
    ({"prompt": "lone \ud800 surrogate"}, "invalid_text"),
    ({"messages": [{"role": "bot", "content": "hi"}]}, "unknown_role"),
    ({"messages": [{"role": "user", "content": ""}]}, "invalid_message"),
    ({"messages": [{"role": "tool", "content": "42"}]}, "invalid_message"),
    ({"messages": [{"role": "assistant", "content": None}]}, "invalid_message"),
    ({"messages": ["hi"]}, "invalid_message"),
    ({"prompt": "hi", "max_tokens": 0}, "invalid_max_tokens"),
    ({"prompt": "hi", "max_tokens": 1.5}, "invalid_max_tokens"),
    ({"prompt": "hi", "temperature": 2.5}, "invalid_temperature"),
    ({"prompt": "hi", "temperature": True}, "invalid_temperature"),
    ({"prompt": "hi", "deadline_s": 0}, "invalid_deadline_s"),
    ({"prompt": "hi", "intent": "SMALLTALK"}, "invalid_intent"),
    ({"prompt": "hi", "priority": "urgent"}, "invalid_priority"),
    ({"prompt": "hi", "user_id": "u" * 129}, "invalid_user_id"),
    ({"prompt": "hi", "user_id": ["u"]}, "invalid_user_id"),
    ({"prompt": "hi", "metadata": [1, 2]}, "invalid_metadata"),
    ({"prompt": "hi", "system": 7}, "invalid_system"),
    ({"prompt": "hi", "tools": {"name": "x"}}, "invalid_tools"),
    ({"prompt": "hi", "tools": [{"name": "a b", "parameters": {}}]}, "invalid_tools"),
    ({"prompt": "hi", "tools": [{"name": "lookup"}]}, "tool_without_schema"),
    (
        {"prompt": "hi", "tools": [{"name": "t", "parameters": {"type": "array"}}]},
        "tool_without_schema",
    ),
    ([{"prompt": "hi"}], "invalid_request"),
    # a misspelt field is refused, never served as if it were absent
    ({"prompt": "Production is down", "prioirty": "critical"}, "unknown_field"),
    ({"promt": "Production is down"}, "unknown_field"),
    ({"prompt": "hi", "customer": "acme"}, "unknown_field"),
]


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.fixture(scope="module")
def result_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    # A result is checked against #/$defs/Result, as a producer reading answers would.
    return jsonschema.Draft202012Validator(
        {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": "#/$defs/Result"}
    )


def test_the_committed_schema_is_the_generated_one_and_what_aipool_schema_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Regenerate with: aipool schema > docs/contract.schema.json
    assert COMMITTED.read_text(encoding="utf-8") == schema_text()
    assert run(["schema"]) == 0
    assert capsys.readouterr().out == COMMITTED.read_text(encoding="utf-8")
    assert json.loads(schema_text())["$schema"] == DRAFT


def test_the_readmes_example_requests_are_valid_for_the_schema_and_the_workers(
    validator: jsonschema.Draft202012Validator,
) -> None:
    # Given the example requests as the README shows them
    for example in README_PYTHON_REQUESTS:
        assert json.dumps(example, ensure_ascii=False) in README
    examples = README_PYTHON_REQUESTS + _readme_json_requests()
    assert len(examples) >= 3
    for example in examples:
        # Then a producer validating its kwargs against the schema accepts each, and so do the
        # workers
        validator.validate({"request": example})
        parse_request(example)


@pytest.mark.parametrize(("request_body", "code"), MALFORMED)
def test_a_malformed_request_is_refused_by_the_schema_and_by_the_workers(
    request_body: Any, code: str, validator: jsonschema.Draft202012Validator
) -> None:
    assert not validator.is_valid({"request": request_body})
    with pytest.raises(InvalidRequest) as refused:
        parse_request(request_body)
    assert refused.value.code == code


def test_kwargs_other_than_the_request_are_refused(
    validator: jsonschema.Draft202012Validator,
) -> None:
    assert not validator.is_valid({"request": {"prompt": "hi"}, "priority": "high"})
    assert not validator.is_valid({"prompt": "hi"})


def _journey() -> Journey:
    route = Route(
        intent="QUERY",
        complexity=2,
        chain=(
            Hop("ollama", "llama3.2:3b"),
            Hop("gemini", "gemini-2.5-flash"),
            Hop("static", "static"),
        ),
        reason="simple query",
        confidence=0.9,
        rule="simple_query",
    )
    journey = Journey(route=route, received_at=0.0)
    journey.attempts.append(Attempt("ollama", "llama3.2:3b", "circuit_open", "breaker open"))
    return journey


def test_every_kind_of_result_the_pool_returns_is_valid_for_the_schema(
    result_validator: jsonschema.Draft202012Validator,
) -> None:
    completion = Completion(
        text="",
        model="gemini-2.5-flash",
        input_tokens=12,
        output_tokens=3,
        tool_calls=[ToolCall(name="restart_pod", arguments={"pod": "api-7"}, id="call-1")],
        finish_reason="tool_calls",
    )
    results = [
        result.answered("id-1", _journey(), "gemini", completion, Decimal("0.000021")),
        result.terminal("id-2", _journey(), "static", "sorry"),
        result.terminal("id-3", _journey(), "refuse", "no tool model"),
        result.error("id-4", "missing_messages", "the request needs 'messages' or 'prompt'"),
    ]
    for body in results:
        result_validator.validate(json.loads(json.dumps(body)))
    assert not result_validator.is_valid({**results[0], "status": "maybe"})


def test_the_schema_and_the_workers_know_the_same_request_fields(
    validator: jsonschema.Draft202012Validator,
) -> None:
    from aipool.contract.request import REQUEST_FIELDS

    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    request = schema["$defs"]["Request"]
    assert set(request["properties"]) == set(REQUEST_FIELDS)
    assert request["additionalProperties"] is False


def test_extra_keys_inside_messages_and_tools_are_accepted_by_both(
    validator: jsonschema.Draft202012Validator,
) -> None:
    # Given a conversation turn and a tool in a vendor's shape, with keys the contract does not name
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "refusal": None, "annotations": []},
            {"role": "user", "content": "restart it"},
        ],
        "tools": [{"name": "restart", "parameters": {"type": "object"}, "strict": True}],
    }
    # Then both accept it: those keys change nothing the pool does
    validator.validate({"request": request})
    parse_request(request)


def test_the_readme_says_unknown_request_keys_are_refused_and_nested_ones_ignored() -> None:
    section = README.split("### Request", 1)[1].split("## Running in production", 1)[0]
    flat = " ".join(section.split())
    assert "is refused (`unknown_field`) naming the closest field" in flat
    assert "(did you mean 'priority'?)" in flat
    assert "keys the contract does not name are ignored" in flat
