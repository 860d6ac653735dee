"""The producer contract: what a malformed request is told, and what a valid one becomes."""

from __future__ import annotations

import json

import pytest

from aipool.contract.request import (
    INTENTS,
    MAX_DEPTH,
    MAX_METADATA_SIZE,
    MAX_USER_ID_LENGTH,
    parse_request,
)
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


def test_integers_written_with_a_point_are_integers_as_the_schema_says() -> None:
    # Given a producer whose language writes every number as a float (JSON Schema's integer)
    request = parse_request(
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": 7.0, "name": "f"}]},
                {"role": "tool", "tool_call_id": 7.0, "content": "ok"},
            ],
            "max_tokens": 256.0,
            "user_id": 42.0,
        }
    )
    # Then it is served as if it wrote the integers, and a fraction is still refused
    assert request.max_tokens == 256 and isinstance(request.max_tokens, int)
    assert request.user_id == "42"
    assert request.messages[1].tool_calls[0].id == "7" == request.messages[2].tool_call_id
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"prompt": "a", "max_tokens": 256.5})
    assert caught.value.code == "invalid_max_tokens"


# -- text no provider can encode ---------------------------------------------------------------

_TOOL = {"name": "logs", "description": "Read logs", "parameters": {"type": "object"}}


def _with_text(field: str, text: str) -> dict:
    """A valid request with ``text`` placed in the field named ``field``."""
    call = {"id": "c1", "name": "logs", "arguments": {"pod": "a"}}
    payload: dict = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "name": "logs", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": [dict(_TOOL)],
    }
    if field == "messages[0].content":
        payload["messages"][0]["content"] = f"hi {text}"
    elif field == "messages[2].content":
        payload["messages"][2]["content"] = text
    elif field == "messages[2].name":
        payload["messages"][2]["name"] = f"logs{text}"
    elif field == "messages[2].tool_call_id":
        payload["messages"][2]["tool_call_id"] = f"c1{text}"
    elif field == "messages[1].tool_calls[0].name":
        call["name"] = f"logs{text}"
    elif field == "messages[1].tool_calls[0].id":
        call["id"] = f"c1{text}"
    elif field == "messages[1].tool_calls[0].arguments.pod":
        call["arguments"] = {"pod": f"a{text}"}
    elif field == "messages[1].tool_calls[0].arguments":
        # JSON text as OpenAI sends it: a surrogate stays raw, a control character is escaped
        call["arguments"] = json.dumps({"pod": f"a{text}"}, ensure_ascii=False)
    elif field == "system":
        payload["system"] = f"Be brief{text}"
    elif field == "prompt":
        payload = {"prompt": f"What is a pod?{text}"}
    elif field == "tools[0].name":
        payload["tools"][0]["name"] = f"logs{text}"
    elif field == "tools[0].description":
        payload["tools"][0]["description"] = f"Read {text}"
    elif field == "tools[0].parameters.properties.pod.description":
        payload["tools"][0]["parameters"] = {
            "type": "object",
            "properties": {"pod": {"type": "string", "description": f"the pod{text}"}},
        }
    elif field == "user_id":
        payload["user_id"] = f"svc-7{text}"
    elif field == "intent":
        payload["intent"] = f"QUERY{text}"
    elif field == "metadata.team":
        payload["metadata"] = {"team": f"sre{text}"}
    elif field == "metadata[key #0]":
        payload["metadata"] = {f"team{text}": "sre"}
    else:
        raise AssertionError(field)
    return payload


TEXT_FIELDS = [
    "messages[0].content",
    "messages[2].content",
    "messages[2].name",
    "messages[2].tool_call_id",
    "messages[1].tool_calls[0].name",
    "messages[1].tool_calls[0].id",
    "messages[1].tool_calls[0].arguments.pod",
    "messages[1].tool_calls[0].arguments",
    "system",
    "prompt",
    "tools[0].name",
    "tools[0].description",
    "tools[0].parameters.properties.pod.description",
    "user_id",
    "intent",
    "metadata.team",
    "metadata[key #0]",
]


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("bad", ["\ud800", "\udfff", "\x00", "\x1b", "\x0b"])
def test_given_unsendable_text_in_any_field_then_the_request_is_refused_naming_the_field(
    field: str, bad: str
) -> None:
    # Given a valid request with a lone surrogate or a control character in one string field
    payload = _with_text(field, bad)
    # When it is parsed
    with pytest.raises(InvalidRequest) as caught:
        parse_request(payload)
    # Then it is refused as the request's fault, and the message names the field
    assert caught.value.code == "invalid_text"
    assert field in caught.value.message
    # and the message itself can be sent back (no echo of the bad character)
    caught.value.message.encode("utf-8")
    assert bad not in caught.value.message


@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_given_tabs_newlines_and_any_valid_unicode_then_the_request_is_accepted(
    field: str,
) -> None:
    # Given text with tab, newline, carriage return, CJK and an emoji (a real surrogate pair)
    good = "\t\n\r為什麼😀" if field not in ("tools[0].name", "intent") else ""
    if field == "metadata[key #0]":
        good = "為什麼😀"
    # When parsed / Then accepted
    parse_request(_with_text(field, good))


def _nested(levels: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"next": value}
    return value


@pytest.mark.parametrize(
    ("place", "payload_for"),
    [
        ("metadata", lambda v: {"prompt": "hi", "metadata": v}),
        (
            "tools[0].parameters",
            lambda v: {"prompt": "hi", "tools": [{"name": "t", "parameters": v}]},
        ),
        (
            "messages[1].tool_calls[0].arguments",
            lambda v: {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "tool_calls": [{"name": "t", "arguments": v}]},
                ]
            },
        ),
        (
            "messages[1].tool_calls[0].arguments",
            lambda v: {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "assistant",
                        "tool_calls": [{"name": "t", "arguments": json.dumps(v)}],
                    },
                ]
            },
        ),
    ],
)
def test_given_nesting_deeper_than_the_bound_then_too_deep(place: str, payload_for) -> None:  # type: ignore[no-untyped-def]
    # Given 32 levels (accepted) and 33 levels (refused)
    parse_request(payload_for(_nested(MAX_DEPTH)))
    with pytest.raises(InvalidRequest) as caught:
        parse_request(payload_for(_nested(MAX_DEPTH + 1)))
    # Then the code says why and the message says where
    assert caught.value.code == "too_deep"
    assert place in caught.value.message


def test_given_arguments_nested_beyond_what_the_json_parser_takes_then_too_deep() -> None:
    payload = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"name": "t", "arguments": "[" * 200_000}]},
        ]
    }
    with pytest.raises(InvalidRequest) as caught:
        parse_request(payload)
    assert caught.value.code == "too_deep"


def test_given_a_user_id_longer_than_the_ledger_column_then_it_is_refused() -> None:
    from aipool.ledger.models import usage_logs

    # The bound is the ledger's column width, so an accepted user_id is always stored whole.
    assert usage_logs.c.user_id.type.length == MAX_USER_ID_LENGTH
    assert parse_request({"prompt": "hi", "user_id": "u" * MAX_USER_ID_LENGTH}).user_id
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"prompt": "hi", "user_id": "u" * (MAX_USER_ID_LENGTH + 1)})
    assert caught.value.code == "invalid_user_id"


def test_given_metadata_larger_than_the_bound_then_it_is_refused() -> None:
    small = {"trace": "x" * 100}
    big = {f"k{i}": "x" * 100 for i in range(MAX_METADATA_SIZE // 100)}
    assert parse_request({"prompt": "hi", "metadata": small}).metadata == small
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"prompt": "hi", "metadata": big})
    assert caught.value.code == "metadata_too_large"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (float("nan"), "invalid_number"),
        (float("inf"), "invalid_number"),
        (10**30, "invalid_number"),
        ({1, 2}, "invalid_value"),
        (b"bytes", "invalid_value"),
        ({1: "int key"}, "invalid_value"),
    ],
)
def test_given_a_value_json_cannot_carry_then_it_is_refused(value: object, code: str) -> None:
    # Given a Python producer passing something that is not plain JSON in metadata
    with pytest.raises(InvalidRequest) as caught:
        parse_request({"prompt": "hi", "metadata": {"v": value}})
    assert caught.value.code == code
    assert "metadata" in caught.value.message


def test_given_non_string_ids_and_names_then_they_are_refused_not_stringified() -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_request(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "name": ["logs"], "content": "ok"},
                ]
            }
        )
    assert caught.value.code == "invalid_message"
    assert "messages[1].name" in caught.value.message


def test_given_a_request_when_its_estimate_is_asked_often_then_the_text_is_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a parsed request (each hop asks for its estimate several times)
    import aipool.contract.request as contract

    request = parse_request({"prompt": "x" * 10_000, "max_tokens": 100})
    reads: list[int] = []
    original = contract.estimate_tokens
    monkeypatch.setattr(contract, "estimate_tokens", lambda t: reads.append(1) or original(t))
    # When asked four times
    totals = {request.estimated_total_tokens() for _ in range(3)}
    inputs = request.estimated_input_tokens()
    # Then the answers agree and no prompt text was read again
    assert totals == {inputs + 100}
    assert inputs == 2_500 + 4
    assert reads == []


@pytest.mark.parametrize(
    ("request_body", "says"),
    [
        (
            {"prompt": "Production is down", "prioirty": "critical"},
            "'prioirty' is not a request field (did you mean 'priority'?)",
        ),
        (
            {"promt": "Production is down"},
            "'promt' is not a request field (did you mean 'prompt'?)",
        ),
        ({"prompt": "hi", "deadline": 5}, "(did you mean 'deadline_s'?)"),
        (
            {"prompt": "hi", "customer": "acme"},
            "'customer' is not a request field; the fields are messages, prompt, system, tools, "
            "max_tokens, temperature, intent, priority, deadline_s, user_id, service, metadata, and data of "
            "your own goes in 'metadata'",
        ),
        # odd producer text is not repeated back
        (
            {"prompt": "hi", "a\u202eb": 1, "zz": 2},
            "a key that is not a request field (1 more unknown)",
        ),
    ],
)
def test_given_an_unknown_key_when_parsed_then_it_is_refused_naming_the_closest_field(
    request_body: dict[str, object], says: str
) -> None:
    # When a request carries a key the contract does not have
    with pytest.raises(InvalidRequest) as refused:
        parse_request(request_body)
    # Then it is refused, not served as if the key were absent
    assert refused.value.code == "unknown_field"
    assert says in str(refused.value)
