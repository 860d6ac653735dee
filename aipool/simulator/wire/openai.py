"""OpenAI's Chat Completions API (NVIDIA's is compatible): ``POST /v1/chat/completions``."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from aipool.simulator.answers import Answer, ToolCallAnswer
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

_ERROR_TYPES: dict[str, tuple[str, str | None]] = {
    "bad_request": ("invalid_request_error", None),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "not_found": ("invalid_request_error", "not_found"),
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "server_error": ("server_error", None),
    "overloaded": ("server_error", "engine_overloaded"),
}


class OpenAIWire(WireProtocol):
    """OpenAI-compatible: Bearer auth, ``{"error": {message, type, code}}``, arguments as a string."""

    kind = "openai"

    def base_url(self, root: str) -> str:
        return root + "/v1"

    def is_generation(self, method: str, path: str) -> bool:
        return method == "POST" and path == "/v1/chat/completions"

    def probe(self, method: str, path: str) -> Any | None:
        if method in ("GET", "HEAD") and path == "/v1/models":
            return {"object": "list", "data": []}
        return None

    def authenticate(self, headers: Mapping[str, str], query: Mapping[str, str]) -> Reply | None:
        if headers.get("authorization", "").lower().startswith("bearer "):
            return None
        return self.error("authentication", "You didn't provide an API key.")

    def parse(self, path: str, body: Any) -> Exchange:
        request = require_dict(body, "request body")
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("you must provide a model parameter")
        messages = require_list(request.get("messages"), "messages")
        if not messages:
            raise BadRequest("messages must not be empty")
        texts: list[str] = []
        last_user = ""
        tool_names: dict[str, str] = {}
        for raw in messages:
            message = require_dict(raw, "message")
            texts.append(text_of(message.get("content")))
            for call in message.get("tool_calls") or []:
                if not isinstance(call, dict):
                    raise BadRequest("tool_calls entries must be objects")
                function = call.get("function") or {}
                tool_names[str(call.get("id"))] = str(function.get("name", "tool"))
                texts.append(str(function.get("name", "")) + str(function.get("arguments", "")))
            if message.get("role") == "user":
                last_user = text_of(message.get("content"))
        tool_result = None
        if messages[-1].get("role") == "tool":
            last = messages[-1]
            name = tool_names.get(str(last.get("tool_call_id")), str(last.get("name") or "tool"))
            tool_result = ToolResult(name=name, content=text_of(last.get("content")))
        limit = request.get("max_completion_tokens", request.get("max_tokens"))
        # NVIDIA's Nemotron reasons when its system prompt says so.
        reasoning = any(
            isinstance(m, dict)
            and m.get("role") == "system"
            and "detailed thinking on" in text_of(m.get("content")).lower()
            for m in messages
        )
        return Exchange(
            model=model,
            texts=tuple(texts),
            message_count=len(messages),
            last_user_text=last_user,
            tools=tuple(_tool(raw) for raw in require_list(request.get("tools") or [], "tools")),
            tool_result=tool_result,
            max_tokens=optional_limit(limit, "max_tokens"),
            reasoning=reasoning,
        )

    def render(self, exchange: Exchange, answer: Answer) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
        if answer.tool_calls:
            message["tool_calls"] = [
                {
                    "id": "call_" + call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call, answer)},
                }
                for call in answer.tool_calls
            ]
            finish_reason = "tool_calls"
        else:
            finish_reason = "length" if answer.truncated else "stop"
        if answer.call_fault == "unparsed_call":
            # Llama-Nemotron's own call format, which a server without its parser passes on.
            written = [{"name": c.name, "arguments": c.arguments} for c in answer.tool_calls]
            content = f"<TOOLCALL>{json.dumps(written, ensure_ascii=False)}</TOOLCALL>"
            message, finish_reason = {"role": "assistant", "content": content}, "stop"
        elif answer.withheld == "thinking_exhausted":
            message, finish_reason = {"role": "assistant", "content": ""}, "length"
        elif answer.withheld == "safety":
            message, finish_reason = {"role": "assistant", "content": None}, "content_filter"
        elif answer.withheld == "refusal":
            message = {
                "role": "assistant",
                "content": None,
                "refusal": "I'm sorry, I cannot help with that. (simulated refusal)",
            }
            finish_reason = "stop"
        body: dict[str, Any] = {
            "id": "chatcmpl-" + uuid.uuid4().hex[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": exchange.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
        }
        if answer.usage_reported:
            # OpenAI's accounting: prompt_tokens includes the cached part, completion_tokens
            # the reasoning; the details say how many.
            completion = answer.output_tokens + answer.thinking_tokens
            body["usage"] = {
                "prompt_tokens": answer.input_tokens,
                "completion_tokens": completion,
                "total_tokens": answer.input_tokens + completion,
                "prompt_tokens_details": {"cached_tokens": answer.cache_read_tokens},
                "completion_tokens_details": {"reasoning_tokens": answer.thinking_tokens},
            }
        return body

    def error_body(self, kind: ErrorKind, status: int, message: str) -> Any:
        error_type, code = _ERROR_TYPES[kind]
        return {"error": {"message": message, "type": error_type, "param": None, "code": code}}

    def rate_limited(self, delay_s: float, *, daily: bool = False) -> Reply:
        # OpenAI's rate-limit headers: the spent limit's remaining count is 0, its reset a
        # duration.
        reply = self.error("rate_limit", "Rate limit reached for requests (simulated fault)")
        headers = (
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", f"{delay_s:g}s"),
        )
        return Reply(reply.status, reply.body, headers)

    def model_missing(self, model: str) -> Reply:
        return self.error(
            "not_found", f"The model `{model}` does not exist or you do not have access to it."
        )

    def prompt_blocked(self, exchange: Exchange, answer: Answer) -> Reply:
        # The content filter's documented refusal of a prompt (Azure OpenAI's content filtering
        # guide): the API's 400 error, its code content_filter, its innererror the policy and
        # the categories filtered (each is reported; the simulator names the one it filtered).
        message = (
            "The response was filtered due to the prompt triggering the content management "
            "policy. Please modify your prompt and retry. (simulated fault)"
        )
        body = self.error_body("bad_request", 400, message)
        body["error"].update(type=None, param="prompt", code="content_filter", status=400)
        body["error"]["innererror"] = {
            "code": "ResponsibleAIPolicyViolation",
            "content_filter_result": {"violence": {"filtered": True, "severity": "high"}},
        }
        return Reply.json(400, body)

    def tools_unsupported(self, model: str) -> Reply | None:
        # vLLM's refusal (a NIM is vLLM inside) of tools with no tool-call parser: tools without
        # tool_choice are "auto". Its own error shape, no "error" object.
        body = {
            "object": "error",
            "message": '"auto" tool choice requires --enable-auto-tool-choice and '
            "--tool-call-parser to be set",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
        return Reply.json(400, body)

    def account_refused(self, *, spend_limit: bool = False) -> Reply:
        # OpenAI's 429 for credits run out, which no wait ends (its error codes guide).
        body = {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing "
                "details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        }
        return Reply.json(429, body)


def _arguments(call: ToolCallAnswer, answer: Answer) -> str:
    """A call's arguments as the server passes on what the model wrote: its JSON, or (a
    ``malformed_call``) that JSON cut in half, never an object."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    text = json.dumps(call.arguments, ensure_ascii=False)
    return text[: max(1, len(text) // 2)] if answer.call_fault == "malformed_call" else text


def _tool(raw: Any) -> ToolSpec:
    tool = require_dict(raw, "tool")
    function = require_dict(tool.get("function"), "tool.function")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("tools.function.name is required")
    return ToolSpec(
        name=name,
        description=str(function.get("description") or ""),
        schema=function.get("parameters") or {},
    )
