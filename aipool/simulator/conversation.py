"""The provider-neutral view of an inference request that every wire protocol parses into.

Only what an answer depends on is kept: the model, the texts (for token counts), the last user
text (what the answer is about), the tools offered, and the tool result if the conversation's
last turn is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class BadRequest(ValueError):
    """Raised by a wire protocol when a request body is not one its provider would accept."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool the request offers; ``schema`` is the JSON Schema of its arguments."""

    name: str
    description: str = ""
    schema: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResult:
    """The result of a tool call, when it is the conversation's last turn."""

    name: str
    content: str


@dataclass(frozen=True)
class Exchange:
    """One parsed inference request.

    ``texts`` holds every piece of prompt text (system, messages, tool results) and
    ``message_count`` the number of turns, both for input token counts. ``max_tokens`` is ``None``
    when the request sets no output limit.
    """

    model: str
    texts: tuple[str, ...]
    message_count: int
    last_user_text: str
    tools: tuple[ToolSpec, ...] = ()
    tool_result: ToolResult | None = None
    max_tokens: int | None = None
    #: The thinking budget the request set (0 turns thinking off); ``None``: the model's default.
    thinking_budget: int | None = None
    #: The request asked for reasoning (Nemotron's "detailed thinking on" system prompt).
    reasoning: bool = False
    #: How many of ``texts`` (from the start) the request marked for its prompt cache
    #: (Anthropic's ``cache_control``); ``None``: the provider caches on its own (implicit).
    cache_breakpoint: int | None = None


def text_of(value: Any) -> str:
    """Flatten a content value (string, list of blocks/parts, dict) into its text, for counting."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(part for part in (text_of(item) for item in value) if part)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"])
        if "content" in value:
            return text_of(value["content"])
    # Anything else (numbers, structured tool output) counts as its JSON-ish text.
    return str(value)


def require_dict(value: Any, what: str) -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise :class:`BadRequest` naming ``what``."""
    if not isinstance(value, dict):
        raise BadRequest(f"{what} must be a JSON object")
    return value


def require_list(value: Any, what: str) -> list[Any]:
    """Return ``value`` if it is a JSON array, else raise :class:`BadRequest` naming ``what``."""
    if not isinstance(value, list):
        raise BadRequest(f"{what} must be a JSON array")
    return value


def optional_limit(value: Any, what: str) -> int | None:
    """Return an output-token limit (positive integer) or ``None``; raise on anything else."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadRequest(f"{what} must be a positive integer")
    return value
