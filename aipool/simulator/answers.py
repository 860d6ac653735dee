"""Deterministic answers: what a simulated model says, and how many tokens it costs.

The same exchange always gets the same answer. Text answers name the provider and model and carry a
short sentence picked by a hash of the last user message, so they are recognisable in logs without
echoing the prompt. With tools offered the answer is a tool call, unless the last turn already is a
tool result, which the text answer then mentions.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from aipool.simulator.conversation import Exchange
from aipool.simulator.tool_args import build_arguments, pick_tool
from aipool.tokens import estimate_tokens

#: Tokens each message's framing (role, separators) adds to the prompt, as chat templates do.
TOKENS_PER_MESSAGE = 4
#: Tokens a tool call's framing adds to its JSON arguments.
TOKENS_PER_TOOL_CALL = 8

_OPENINGS = (
    "Here is a short answer",
    "In brief",
    "The simple version",
    "Put plainly",
    "Summing it up",
    "To answer directly",
    "The key point",
    "In short",
)
_CLAIMS = (
    "the request was understood and handled end to end",
    "the most reliable option is the simplest one that works",
    "it depends mostly on the inputs you already have",
    "a careful step-by-step approach gives the best result",
    "the main trade-off is between speed and accuracy",
    "there are three things to check before going further",
    "the usual answer holds here with one small caveat",
    "start small, measure, then adjust the plan",
)
_CLOSINGS = (
    "Let me know if you want more detail.",
    "That should cover the question.",
    "Further context would sharpen this answer.",
    "This is a simulated reply.",
)


@dataclass(frozen=True)
class ToolCallAnswer:
    """A tool call the simulated model makes; ``call_id`` is deterministic (no provider prefix).

    ``raw_arguments``, when set, is sent instead of ``arguments``: text that is not a JSON object
    (the ``bad_tool_args`` fault).
    """

    name: str
    arguments: dict[str, Any]
    call_id: str
    raw_arguments: str | None = None

    def wire_arguments(self) -> Any:
        """What goes on the wire where the provider puts a call's arguments object."""
        return self.arguments if self.raw_arguments is None else self.raw_arguments


@dataclass(frozen=True)
class Answer:
    """What the simulated model answers, with its token usage.

    ``truncated`` is true when the output limit cut the text short (finish reason "length");
    ``usage_reported`` false leaves the usage out of the response (the ``no_usage`` fault).
    """

    text: str
    input_tokens: int
    output_tokens: int
    tool_calls: tuple[ToolCallAnswer, ...] = field(default=())
    truncated: bool = False
    usage_reported: bool = True


def compose(provider: str, exchange: Exchange) -> Answer:
    """Return the deterministic answer of ``provider``'s model to ``exchange``."""
    input_tokens = count_input_tokens(exchange)
    if exchange.tools and exchange.tool_result is None:
        tool = pick_tool(exchange.tools, exchange.last_user_text)
        arguments = build_arguments(tool.schema, exchange.last_user_text)
        digest = _digest(exchange.last_user_text, tool.name, json.dumps(arguments, sort_keys=True))
        call = ToolCallAnswer(name=tool.name, arguments=arguments, call_id=digest[:24])
        output = TOKENS_PER_TOOL_CALL + estimate_tokens(tool.name + json.dumps(arguments))
        return Answer(text="", input_tokens=input_tokens, output_tokens=output, tool_calls=(call,))
    text = f"[{provider}/{exchange.model}] {_sentence(exchange)}"
    text, truncated = _fit(text, exchange.max_tokens)
    return Answer(
        text=text,
        input_tokens=input_tokens,
        output_tokens=estimate_tokens(text),
        truncated=truncated,
    )


def count_input_tokens(exchange: Exchange) -> int:
    """Prompt tokens: the texts, a few per message, and the tool declarations the model reads."""
    tokens = sum(estimate_tokens(text) for text in exchange.texts)
    tokens += TOKENS_PER_MESSAGE * exchange.message_count
    for tool in exchange.tools:
        tokens += estimate_tokens(tool.name + tool.description + json.dumps(tool.schema))
    return max(1, tokens)


def _sentence(exchange: Exchange) -> str:
    if exchange.tool_result is not None:
        result = " ".join(exchange.tool_result.content.split())
        if len(result) > 120:
            result = result[:117] + "..."
        return f"The {exchange.tool_result.name} tool returned: {result}"
    digest = int(_digest(exchange.last_user_text), 16)
    opening = _OPENINGS[digest % len(_OPENINGS)]
    claim = _CLAIMS[(digest >> 8) % len(_CLAIMS)]
    closing = _CLOSINGS[(digest >> 16) % len(_CLOSINGS)]
    return f"{opening}: {claim}. {closing} (ref {_digest(exchange.last_user_text)[:8]})"


def _fit(text: str, max_tokens: int | None) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_tokens`` estimated tokens, at a word boundary when possible."""
    if max_tokens is None or estimate_tokens(text) <= max_tokens:
        return text, False
    words = text.split(" ")
    kept: list[str] = []
    for word in words:
        candidate = " ".join([*kept, word])
        if estimate_tokens(candidate) > max_tokens:
            break
        kept.append(word)
    if not kept:
        # A single word longer than the limit: cut by characters (about four per token).
        return text[: max(1, 4 * max_tokens)], True
    return " ".join(kept), True


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
