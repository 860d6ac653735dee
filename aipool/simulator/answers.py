"""Deterministic answers: what a simulated model says, and how many tokens it costs.

The same exchange always gets the same answer. Models that think do, as their providers bill it
(:func:`thinking_tokens`): Gemini 2.5 Flash and Pro by default (not Flash-Lite; a thinking budget
of 0 turns it off), Claude with extended thinking on, Nemotron with "detailed thinking on". Text answers name the provider and model and carry a
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
    #: Tokens the model thought before answering, billed as output beside ``output_tokens``.
    thinking_tokens: int = 0
    #: Of ``input_tokens``: written to, and read from, the provider's prompt cache.
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    #: Of ``cache_write_tokens``: written to Anthropic's 1-hour cache (the ``cache_1h`` fault).
    cache_write_1h_tokens: int = 0
    #: Why the provider sends no usable answer though it bills one (a fault of
    #: :data:`aipool.simulator.faults.UNUSABLE_KINDS`: ``safety``, ``refusal``,
    #: ``thinking_exhausted``); ``None`` for an answer.
    withheld: str | None = None
    #: What is wrong with the tool calls (the ``malformed_call``, ``unknown_tool`` and
    #: ``unparsed_call`` faults), for a provider whose answer shows it its own way (Gemini's
    #: finish reasons, a call left in the text); ``None`` otherwise.
    call_fault: str | None = None


def compose(provider: str, exchange: Exchange) -> Answer:
    """Return the deterministic answer of ``provider``'s model to ``exchange``."""
    input_tokens = count_input_tokens(exchange)
    if exchange.tools and exchange.tool_result is None:
        tool = pick_tool(exchange.tools, exchange.last_user_text)
        arguments = build_arguments(tool.schema, exchange.last_user_text)
        digest = _digest(exchange.last_user_text, tool.name, json.dumps(arguments, sort_keys=True))
        call = ToolCallAnswer(name=tool.name, arguments=arguments, call_id=digest[:24])
        output = TOKENS_PER_TOOL_CALL + estimate_tokens(tool.name + json.dumps(arguments))
        return Answer(
            text="",
            input_tokens=input_tokens,
            output_tokens=output,
            tool_calls=(call,),
            thinking_tokens=thinking_tokens(provider, exchange, output),
        )
    text = f"[{provider}/{exchange.model}] {_sentence(exchange)}"
    text, truncated = _fit(text, exchange.max_tokens)
    output = estimate_tokens(text)
    return Answer(
        text=text,
        input_tokens=input_tokens,
        output_tokens=output,
        truncated=truncated,
        thinking_tokens=thinking_tokens(provider, exchange, output),
    )


#: Thinking a simulated model does per token of its answer, plus a fixed start.
THINKING_PER_OUTPUT_TOKEN = 4
THINKING_BASE = 24


def thinks_by_default(provider: str, model: str) -> bool:
    """Whether ``model`` thinks when the request says nothing: Gemini 2.5 Flash and Pro do
    (Flash-Lite does not), as Google's API does."""
    name = model.lower()
    return provider == "gemini" and name.startswith("gemini-2.5") and "lite" not in name


def thinking_tokens(provider: str, exchange: Exchange, output_tokens: int) -> int:
    """The thinking tokens the simulated model spends on an answer of ``output_tokens``: none
    unless it thinks by default or the request asked for it; never past the request's budget,
    nor past ``max_tokens`` where the provider counts thinking inside it (Gemini)."""
    budget = exchange.thinking_budget
    if budget == 0:
        return 0
    if not (exchange.reasoning or budget or thinks_by_default(provider, exchange.model)):
        return 0
    tokens = THINKING_BASE + THINKING_PER_OUTPUT_TOKEN * output_tokens
    if budget:
        tokens = min(tokens, budget)
    if provider == "gemini" and exchange.max_tokens is not None:
        tokens = min(tokens, max(0, exchange.max_tokens - output_tokens))
    return tokens


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
