"""Anthropic's Messages API: ``POST /v1/messages`` with ``x-api-key`` or a Bearer token."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

from aipool.simulator.answers import Answer
from aipool.simulator.conversation import (
    BadRequest,
    Exchange,
    ToolResult,
    ToolSpec,
    optional_limit,
    require_dict,
    require_list,
    text_of,
)
from aipool.simulator.wire.base import ErrorKind, Reply, WireProtocol

_ERROR_TYPES: dict[str, str] = {
    "bad_request": "invalid_request_error",
    "authentication": "authentication_error",
    "not_found": "not_found_error",
    "rate_limit": "rate_limit_error",
    "server_error": "api_error",
    "overloaded": "overloaded_error",
}


class AnthropicWire(WireProtocol):
    """Anthropic: ``{"type": "error", "error": {type, message}}`` errors, 529 when overloaded."""

    kind = "anthropic"
    overloaded_status = 529

    def is_generation(self, method: str, path: str) -> bool:
        return method == "POST" and path == "/v1/messages"

    def authenticate(self, headers: Mapping[str, str], query: Mapping[str, str]) -> Reply | None:
        if headers.get("x-api-key") or headers.get("authorization", "").lower().startswith(
            "bearer "
        ):
            return None
        return self.error("authentication", "x-api-key header is required")

    def parse(self, path: str, body: Any) -> Exchange:
        request = require_dict(body, "request body")
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model: Field required")
        max_tokens = optional_limit(request.get("max_tokens"), "max_tokens")
        if max_tokens is None:
            raise BadRequest("max_tokens: Field required")
        messages = require_list(request.get("messages"), "messages")
        if not messages:
            raise BadRequest("messages: at least one message is required")
        for sampling in _SAMPLING:
            # API version 2026-10-21, which the anthropic SDK 2.x sends, refuses them all, even
            # at their defaults.
            if sampling in request:
                raise BadRequest(f"{sampling}: Extra inputs are not permitted")
        texts: list[str] = []
        breakpoint_at: int | None = None
        system = request.get("system")
        if isinstance(system, list):
            for raw_block in system:
                block = require_dict(raw_block, "system block")
                texts.append(text_of(block.get("text")))
                if block.get("cache_control"):
                    breakpoint_at = len(texts)
        elif system:
            texts.append(text_of(system))
        last_user = ""
        tool_result: ToolResult | None = None
        tool_names: dict[str, str] = {}
        for raw in messages:
            message = require_dict(raw, "message")
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            tool_result = None
            user_texts: list[str] = []
            for raw_block in require_list(blocks, "message.content"):
                block = require_dict(raw_block, "content block")
                kind = block.get("type")
                if kind == "text":
                    texts.append(str(block.get("text", "")))
                    user_texts.append(str(block.get("text", "")))
                elif kind == "tool_use":
                    tool_names[str(block.get("id"))] = str(block.get("name", "tool"))
                    texts.append(str(block.get("name", "")) + text_of(block.get("input")))
                elif kind == "tool_result":
                    result = text_of(block.get("content"))
                    texts.append(result)
                    name = tool_names.get(str(block.get("tool_use_id")), "tool")
                    tool_result = ToolResult(name=name, content=result)
                if block.get("cache_control") and texts:
                    breakpoint_at = len(texts)
            if message.get("role") == "user" and user_texts:
                last_user = "\n".join(user_texts)
        return Exchange(
            model=model,
            texts=tuple(texts),
            message_count=len(messages),
            last_user_text=last_user,
            tools=tuple(_tool(raw) for raw in require_list(request.get("tools") or [], "tools")),
            tool_result=tool_result,
            max_tokens=max_tokens,
            thinking_budget=_thinking_budget(request.get("thinking")),
            cache_breakpoint=breakpoint_at,
        )

    def render(self, exchange: Exchange, answer: Answer) -> Any:
        content: list[dict[str, Any]]
        if answer.tool_calls:
            content = [
                {
                    "type": "tool_use",
                    "id": "toolu_" + call.call_id,
                    "name": call.name,
                    "input": call.wire_arguments(),
                }
                for call in answer.tool_calls
            ]
            stop_reason = "tool_use"
        else:
            content = [{"type": "text", "text": answer.text}]
            stop_reason = "max_tokens" if answer.truncated else "end_turn"
        if answer.withheld == "thinking_exhausted":
            # max_tokens reached inside the thinking: a thinking block and nothing else.
            content = [{"type": "thinking", "thinking": "(simulated thinking)", "signature": "sim"}]
            stop_reason = "max_tokens"
        elif answer.withheld is not None:
            # Anthropic's streaming classifiers and the model's own refusal stop alike: empty
            # content, stop_reason "refusal", the tokens billed.
            content, stop_reason = [], "refusal"
        body: dict[str, Any] = {
            "id": "msg_" + uuid.uuid4().hex[:24],
            "type": "message",
            "role": "assistant",
            "model": exchange.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
        }
        if answer.usage_reported:
            # Anthropic's accounting: input_tokens is the prompt after the last cache
            # breakpoint; cache writes and reads are reported apart. output_tokens includes
            # extended thinking.
            usage: dict[str, Any] = {
                "input_tokens": answer.input_tokens
                - answer.cache_write_tokens
                - answer.cache_read_tokens,
                "cache_creation_input_tokens": answer.cache_write_tokens,
                "cache_read_input_tokens": answer.cache_read_tokens,
                "output_tokens": answer.output_tokens + answer.thinking_tokens,
            }
            if answer.thinking_tokens:
                usage["output_tokens_details"] = {"thinking_tokens": answer.thinking_tokens}
            if answer.cache_write_tokens:
                # The writes by how long they are kept (1-hour writes cost 2x input, 5-minute
                # 1.25x).
                usage["cache_creation"] = {
                    "ephemeral_5m_input_tokens": answer.cache_write_tokens
                    - answer.cache_write_1h_tokens,
                    "ephemeral_1h_input_tokens": answer.cache_write_1h_tokens,
                }
            body["usage"] = usage
        return body

    def model_missing(self, model: str) -> Reply:
        return self.error("not_found", f"model: {model}")

    def account_refused(self, *, spend_limit: bool = False) -> Reply:
        if spend_limit:
            # The organization's spend limit reached: a 400 that names the day it ends.
            today = datetime.now(UTC).date()
            month = date(today.year + today.month // 12, today.month % 12 + 1, 1)
            message = (
                "You have reached your specified API usage limits. You will regain access on "
                f"{month.isoformat()} at 00:00 UTC."
            )
            return self.error("bad_request", message)
        # Anthropic's error type for an account that is not paid up (the SDK's
        # PaymentRequiredError).
        body = {"type": "error", "error": {"type": "billing_error", "message": "Billing error"}}
        return Reply.json(402, body)

    def error_body(self, kind: ErrorKind, status: int, message: str) -> Any:
        return {"type": "error", "error": {"type": _ERROR_TYPES[kind], "message": message}}


#: The sampling parameters the Messages API no longer takes (API version 2026-10-21).
_SAMPLING = ("temperature", "top_p", "top_k")


def _thinking_budget(raw: Any) -> int | None:
    """``thinking: {"type": "enabled", "budget_tokens": N}`` as a budget; off is 0."""
    if raw is None:
        return None
    thinking = require_dict(raw, "thinking")
    if thinking.get("type") != "enabled":
        return 0
    budget = optional_limit(thinking.get("budget_tokens"), "thinking.budget_tokens")
    if budget is None:
        raise BadRequest("thinking.budget_tokens: Field required")
    return budget


def _tool(raw: Any) -> ToolSpec:
    tool = require_dict(raw, "tool")
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("tools.name: Field required")
    return ToolSpec(
        name=name,
        description=str(tool.get("description") or ""),
        schema=tool.get("input_schema") or {},
    )
