"""The producer contract: what a malformed request is told, and what a valid one becomes."""

from __future__ import annotations

import pytest

from aipool.contract import INTENTS, parse_request
from aipool.errors import InvalidRequest
from aipool.routing.intent import Intent


def test_the_contract_accepts_exactly_the_classifier_intents() -> None:
    assert set(INTENTS) == {i.value for i in Intent}


@pytest.mark.parametrize("given", [" query ", "query", "QUERY"])
def test_an_explicit_intent_is_normalised(given: str) -> None:
    assert parse_request({"prompt": "hi", "intent": given}).intent == "QUERY"


@pytest.mark.parametrize("given", ["banana", "", 3])
def test_an_unknown_intent_is_refused(given: object) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"prompt": "hi", "intent": given})
    assert caught.value.code == "invalid_intent"


def test_system_turns_fold_into_the_system_prompt() -> None:
    request = parse_request(
        {
            "system": "Be brief",
            "messages": [
                {"role": "system", "content": "Answer in zh-TW"},
                {"role": "user", "content": "hi"},
            ],
        }
    )
    assert request.system == "Be brief\nAnswer in zh-TW"
    assert [m.role for m in request.messages] == ["user"]


def test_openai_style_tools_and_string_arguments_are_accepted() -> None:
    request = parse_request(
        {
            "messages": [
                {"role": "user", "content": "logs"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"name": "logs", "arguments": '{"pod": "a"}'}],
                },
                {"role": "tool", "name": "logs", "content": "ok"},
            ],
            "tools": [
                {"type": "function", "function": {"name": "logs", "parameters": {"type": "object"}}}
            ],
        }
    )
    assert request.tools[0].name == "logs"
    assert request.messages[1].tool_calls[0].arguments == {"pod": "a"}


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, "ambiguous_input"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "invalid_message"),
        ({"prompt": "a", "temperature": 3}, "invalid_temperature"),
        ({"prompt": "a", "max_tokens": True}, "invalid_max_tokens"),
        ({"prompt": "a", "priority": "urgent"}, "invalid_priority"),
        ({"prompt": "a", "tools": [{"name": "x y", "parameters": {}}]}, "invalid_tools"),
        (
            {"prompt": "a", "tools": [{"name": "x", "parameters": {"type": "string"}}]},
            "tool_without_schema",
        ),
        ({"prompt": "a", "metadata": []}, "invalid_metadata"),
    ],
)
def test_each_malformed_field_has_its_own_code(payload: dict, code: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request(payload)
    assert caught.value.code == code
    assert caught.value.message
