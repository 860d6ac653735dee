"""Anthropic Claude through the ``anthropic`` SDK (``/v1/messages``)."""

from __future__ import annotations

import time
from typing import Any

import anthropic

from aipool.contract.completion import Completion, ToolCall
from aipool.contract.request import Request
from aipool.errors import ProviderError
from aipool.providers.base import (
    building_request,
    call_timeout,
    checked_usage,
    cut_call,
    map_api_error,
    parse_arguments,
    token_part,
    unrunnable_call,
    usable,
    with_tool_call_ids,
)
from aipool.providers.endpoint import ProviderEndpoint
from aipool.secrets import read_secret

_FINISH = {
    "end_turn": "stop",
    "max_tokens": "length",
    # "The response filled the model's context window. Treat the response as truncated."
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "stop_sequence": "stop",
}


def to_claude_messages(request: Request) -> list[dict[str, Any]]:
    """Claude wants strictly alternating turns; tool results are ``tool_result`` blocks in a user turn."""
    out: list[dict[str, Any]] = []
    for m in with_tool_call_ids(request.messages):
        if m.role == "tool":
            role = "user"
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
            ]
        elif m.role == "assistant":
            role = "assistant"
            blocks = [{"type": "text", "text": m.content}] if m.content else []
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            )
        else:
            role = "user"
            blocks = [{"type": "text", "text": m.content}]
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def to_claude_tools(request: Request) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters}
        for t in request.tools
    ]


#: Extended thinking takes a budget of at least this many tokens (Anthropic's minimum).
MIN_THINKING_BUDGET = 1024
#: Models that take extended thinking: Claude 3.7 Sonnet and every Claude 4 and later.
_THINKING_MODELS = ("claude-3-7-", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4")


def thinking_param(model: str, request: Request, budget: int | None) -> dict[str, Any] | None:
    """Extended thinking for ``model``, or ``None`` to send nothing (thinking stays off).

    Only models that take it get it, and only from Anthropic's minimum budget and below
    ``max_tokens`` (the budget is part of it). Claude is sent no temperature (see
    :meth:`ClaudeProvider.complete`), so a request's temperature does not hold thinking off."""
    if not budget or budget < MIN_THINKING_BUDGET or budget >= request.max_tokens:
        return None
    name = model.lower()
    if not (
        name.startswith(_THINKING_MODELS) or (name.startswith("claude-") and _major(name) >= 5)
    ):
        return None
    return {"type": "enabled", "budget_tokens": budget}


def _major(name: str) -> int:
    # claude-sonnet-5, claude-opus-5-1: the first number after the family is the generation.
    for piece in name.split("-")[1:]:
        if piece.isdigit():
            return int(piece)
    return 0


def map_error(exc: Exception) -> ProviderError:
    """The one place anthropic SDK exceptions become aipool errors."""
    return map_api_error(exc, "claude", anthropic)


class ClaudeProvider:
    """Claude, the second cloud fallback and the first hop of critical requests."""

    name = "claude"

    def __init__(self, endpoint: ProviderEndpoint | None = None) -> None:
        self.endpoint = endpoint or ProviderEndpoint.for_provider("claude")
        # max_retries=0: the breaker must see every try, and the chain is the retry policy.
        self._client = anthropic.Anthropic(
            api_key=read_secret("ANTHROPIC_API_KEY") or "missing-key",
            base_url=self.endpoint.base_url,
            max_retries=0,
            timeout=self.endpoint.timeout_s,
        )

    def close(self) -> None:
        """Release the SDK client's connection pool."""
        self._client.close()

    def complete(
        self,
        request: Request,
        model: str,
        *,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        started = time.perf_counter()
        try:
            with building_request():
                kwargs: dict[str, Any] = {}
                if request.system:
                    kwargs["system"] = request.system
                if request.tools:
                    kwargs["tools"] = to_claude_tools(request)
                # No temperature: API version 2026-10-21 (the SDK's default) refuses temperature,
                # top_p and top_k with a 400 even at their defaults, and the SDK no longer takes
                # them. A request's temperature applies to the providers that take one.
                thinking = thinking_param(model, request, thinking_budget)
                if thinking is not None:
                    kwargs["thinking"] = thinking
                messages = to_claude_messages(request)
            message = self._client.messages.create(
                model=model,
                max_tokens=request.max_tokens,
                messages=messages,  # type: ignore[arg-type]
                timeout=call_timeout(timeout_s, self.endpoint.timeout_s),
                **kwargs,
            )
            text = "".join(b.text for b in message.content if b.type == "text")
            calls = [
                ToolCall(name=b.name, arguments=parse_arguments(b.input), id=b.id)
                for b in message.content
                if b.type == "tool_use"
            ]
            # The SDK builds answers without validating them: usage may be missing altogether.
            usage = getattr(message, "usage", None)
            # Anthropic reports cache writes and reads apart from input_tokens; all three are
            # the prompt, billed at three rates. output_tokens includes extended thinking.
            cache_write = token_part(
                self.name,
                "cache_creation_input_tokens",
                getattr(usage, "cache_creation_input_tokens", None),
            )
            cache_read = token_part(
                self.name,
                "cache_read_input_tokens",
                getattr(usage, "cache_read_input_tokens", None),
            )
            uncached = getattr(usage, "input_tokens", None)
            input_tokens, output_tokens = checked_usage(
                self.name,
                request,
                None if uncached is None else uncached + cache_write + cache_read,
                getattr(usage, "output_tokens", None),
                text,
                calls,
            )
            details = getattr(usage, "output_tokens_details", None)
            thought = token_part(
                self.name, "thinking_tokens", getattr(details, "thinking_tokens", None)
            )
            # cache_creation splits the writes by how long they are kept: a 1-hour write costs
            # 2x the input price, a 5-minute one 1.25x (prices.toml).
            split = getattr(usage, "cache_creation", None)
            hour = token_part(
                self.name,
                "ephemeral_1h_input_tokens",
                getattr(split, "ephemeral_1h_input_tokens", None),
            )
            reason = str(message.stop_reason or "end_turn")
            finish = _FINISH.get(reason, reason)
            written = min(cache_write, input_tokens)
            completion = Completion(
                text=text,
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                tool_calls=calls,
                finish_reason=finish,
                latency_ms=(time.perf_counter() - started) * 1000,
                thinking_tokens=min(thought, output_tokens),
                cache_write_tokens=written,
                cache_read_tokens=min(cache_read, input_tokens - written),
                cache_write_1h_tokens=min(hour, written),
            )
            # A refusal stop is Anthropic declining to go on, whatever text came before it. A
            # tool_use block cut by max_tokens holds part of its input: "retry the request with
            # a higher max_tokens value" (Anthropic's tool use guide), here the next provider.
            return usable(
                self.name,
                completion,
                refused=reason == "refusal",
                broken_call=cut_call(finish, calls, request.max_tokens)
                or unrunnable_call(calls, request),
            )
        except Exception as exc:
            raise map_error(exc) from exc
