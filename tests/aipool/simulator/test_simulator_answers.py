"""Deterministic answers, token counts and tool arguments, as plain functions."""

from __future__ import annotations

from typing import Any

from aipool.simulator.answers import compose, count_input_tokens
from aipool.simulator.conversation import Exchange, ToolResult, ToolSpec
from aipool.simulator.tool_args import build_arguments, pick_tool


def exchange(text: str, **fields: Any) -> Exchange:
    base: dict[str, Any] = {
        "model": "m",
        "texts": (text,),
        "message_count": 1,
        "last_user_text": text,
    }
    base.update(fields)
    return Exchange(**base)


def test_answers_differ_by_prompt_but_not_by_repetition() -> None:
    first = compose("gemini", exchange("How do breakers work?"))
    again = compose("gemini", exchange("How do breakers work?"))
    other = compose("gemini", exchange("What is a quota?"))
    assert first == again
    assert first.text != other.text
    assert first.text.startswith("[gemini/m] ")


def test_input_tokens_grow_with_text_messages_and_tools() -> None:
    short = count_input_tokens(exchange("hi"))
    longer = count_input_tokens(exchange("hi " * 200))
    more_messages = count_input_tokens(exchange("hi", message_count=5))
    with_tools = count_input_tokens(exchange("hi", tools=(ToolSpec("lookup", "Find things"),)))
    assert short < longer
    assert short < more_messages
    assert short < with_tools


def test_cjk_prompts_count_a_token_per_character() -> None:
    assert count_input_tokens(exchange("請問今天天氣如何")) >= 8


def test_output_limit_cuts_the_text() -> None:
    answer = compose("ollama", exchange("hello", max_tokens=5))
    assert answer.truncated
    assert answer.output_tokens <= 5


def test_tool_result_answers_mention_the_result() -> None:
    answer = compose("anthropic", exchange("q", tool_result=ToolResult("lookup", "INC-42 is open")))
    assert "lookup" in answer.text and "INC-42 is open" in answer.text
    assert not answer.tool_calls


def test_pick_tool_prefers_name_and_description_matches_then_the_first() -> None:
    tools = (
        ToolSpec("search_tickets", "Search the ticket tracker"),
        ToolSpec("restart_service", "Restart a service on a host"),
    )
    assert pick_tool(tools, "Please restart the nginx service").name == "restart_service"
    assert pick_tool(tools, "Find open tickets").name == "search_tickets"
    assert pick_tool(tools, "zzz").name == "search_tickets"


def test_arguments_fill_required_properties_by_type() -> None:
    schema = {
        "type": "object",
        "properties": {
            "host": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "force": {"type": "boolean"},
            "level": {"type": "string", "enum": ["low", "high"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "window": {
                "type": "object",
                "properties": {"minutes": {"type": "integer"}},
                "required": ["minutes"],
            },
            "maybe": {"type": ["null", "integer"]},
            "optional": {"type": "string"},
        },
        "required": ["host", "count", "ratio", "force", "level", "tags", "window", "maybe"],
    }
    arguments = build_arguments(schema, 'Restart "web-01" now')
    assert arguments == {
        "host": "web-01",
        "count": 1,
        "ratio": 1.0,
        "force": True,
        "level": "low",
        "tags": ["web-01"],
        "window": {"minutes": 1},
        "maybe": 1,
    }


def test_string_arguments_fall_back_to_proper_nouns_then_the_property_name() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    assert build_arguments(schema, "Weather in New York today?") == {"city": "New York"}
    assert build_arguments(schema, "weather today?") == {"city": "city"}
    assert build_arguments({}, "anything") == {}
