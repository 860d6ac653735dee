"""Gemini's REST API: ``POST /{v1,v1beta}/models/{model}:generateContent`` with an API key."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import replace
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

_PATH = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+):generateContent$")

# google.rpc status names, by HTTP status.
_STATUS_NAMES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class GeminiWire(WireProtocol):
    """Gemini: key in ``x-goog-api-key`` or ``?key=``, ``{"error": {code, message, status}}``."""

    kind = "gemini"

    def is_generation(self, method: str, path: str) -> bool:
        return method == "POST" and _PATH.match(path) is not None

    def authenticate(self, headers: Mapping[str, str], query: Mapping[str, str]) -> Reply | None:
        if headers.get("x-goog-api-key") or query.get("key"):
            return None
        if headers.get("authorization", "").lower().startswith("bearer "):
            # OAuth access tokens (Vertex-style clients) are credentials too.
            return None
        return self.error(
            "authentication",
            "Method doesn't allow unregistered callers (callers without established identity). "
            "Please use API Key or other form of API consumer identity to call this API.",
            status=403,
        )

    def parse(self, path: str, body: Any) -> Exchange:
        match = _PATH.match(path)
        if match is None:
            raise BadRequest(f"no generateContent endpoint at {path}")
        model = match.group(2)
        request = require_dict(body, "request body")
        contents = require_list(request.get("contents"), "contents")
        if not contents:
            raise BadRequest("contents is not specified")
        texts: list[str] = []
        system = request.get("systemInstruction") or request.get("system_instruction")
        if system:
            texts.append(text_of(require_dict(system, "systemInstruction").get("parts")))
        last_user = ""
        tool_result: ToolResult | None = None
        for raw in contents:
            content = require_dict(raw, "content")
            parts = require_list(content.get("parts", []), "content.parts")
            tool_result = None
            user_texts: list[str] = []
            for raw_part in parts:
                part = require_dict(raw_part, "part")
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
                    user_texts.append(part["text"])
                response = part.get("functionResponse") or part.get("function_response")
                if isinstance(response, dict):
                    result = json.dumps(response.get("response", {}), ensure_ascii=False)
                    texts.append(result)
                    tool_result = ToolResult(
                        name=str(response.get("name") or "tool"), content=result
                    )
                call = part.get("functionCall") or part.get("function_call")
                if isinstance(call, dict):
                    texts.append(json.dumps(call, ensure_ascii=False))
            if content.get("role", "user") == "user" and user_texts:
                last_user = "\n".join(user_texts)
        config = require_dict(request.get("generationConfig") or {}, "generationConfig")
        thinking = require_dict(
            config.get("thinkingConfig") or config.get("thinking_config") or {}, "thinkingConfig"
        )
        return Exchange(
            model=model,
            texts=tuple(texts),
            message_count=len(contents),
            last_user_text=last_user,
            tools=tuple(_tools(request.get("tools") or [])),
            tool_result=tool_result,
            max_tokens=optional_limit(config.get("maxOutputTokens"), "maxOutputTokens"),
            # Google's API takes either spelling (the SDK sends snake case here).
            thinking_budget=_thinking_budget(
                thinking.get("thinkingBudget", thinking.get("thinking_budget"))
            ),
        )

    def render(self, exchange: Exchange, answer: Answer) -> Any:
        parts: list[dict[str, Any]]
        if answer.tool_calls:
            parts = [
                {"functionCall": {"name": call.name, "args": call.wire_arguments()}}
                for call in answer.tool_calls
            ]
        else:
            parts = [{"text": answer.text}]
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": parts},
            "finishReason": "MAX_TOKENS" if answer.truncated else "STOP",
            "index": 0,
        }
        if answer.call_fault == "malformed_call":
            # Google could not parse the call the model wrote: no content, the call quoted in
            # finishMessage, only the prompt counted.
            call = answer.tool_calls[0]
            candidate = {
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": f"Malformed function call: print(default_api.{call.name}(",
                "index": 0,
            }
            answer = replace(answer, output_tokens=0, thinking_tokens=0)
        elif answer.call_fault == "unknown_tool":
            # The call comes back as the model wrote it, Google's reason beside it.
            candidate["finishReason"] = "UNEXPECTED_TOOL_CALL"
            candidate["finishMessage"] = (
                "Unexpected tool call: Model tried to call an undeclared function: "
                + answer.tool_calls[0].name
            )
        elif answer.withheld == "thinking_exhausted":
            # Thinking used maxOutputTokens: content without parts, usage of thoughts only.
            candidate = {"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}
        elif answer.withheld is not None:
            # Withheld after generation: an empty content object, the reason, the ratings.
            reason = "SAFETY" if answer.withheld == "safety" else "PROHIBITED_CONTENT"
            candidate = {
                "content": {},
                "finishReason": reason,
                "index": 0,
                "safetyRatings": _BLOCKED_RATINGS,
            }
        body: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": exchange.model,
            "responseId": uuid.uuid4().hex[:22],
        }
        if answer.usage_reported:
            body["usageMetadata"] = _usage(answer)
        return body

    def rate_limited(self, delay_s: float, *, daily: bool = False) -> Reply:
        # Google declares the delay in the body only: a RetryInfo detail, no Retry-After header.
        # A spent daily quota is named in the QuotaFailure; its retryDelay still says seconds.
        body = self.error_body(
            "rate_limit",
            429,
            "You exceeded your current quota, please check your plan and billing details. "
            "(simulated fault)",
        )
        body["error"]["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaId": f"GenerateRequestsPer{'Day' if daily else 'Minute'}"
                        "PerProjectPerModel-FreeTier"
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{delay_s:g}s"},
        ]
        return Reply.json(429, body)

    def model_missing(self, model: str) -> Reply:
        return self.error(
            "not_found",
            f"models/{model} is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their "
            "supported methods.",
        )

    def account_refused(self, *, spend_limit: bool = False) -> Reply:
        # A wrong or expired key: 400, the reason only in the ErrorInfo detail (as served).
        message = "API key not valid. Please pass a valid API key."
        body = self.error_body("bad_request", 400, message)
        body["error"]["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": message,
            },
        ]
        return Reply.json(400, body)

    def prompt_blocked(self, exchange: Exchange, answer: Answer) -> Reply:
        # No candidates at all; promptFeedback says why; the prompt is billed.
        body = {
            "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": _BLOCKED_RATINGS},
            "usageMetadata": {
                "promptTokenCount": answer.input_tokens,
                "totalTokenCount": answer.input_tokens,
            },
            "modelVersion": exchange.model,
            "responseId": uuid.uuid4().hex[:22],
        }
        return Reply.json(200, body)

    def error_body(self, kind: ErrorKind, status: int, message: str) -> Any:
        return {
            "error": {
                "code": status,
                "message": message,
                "status": _STATUS_NAMES.get(status, "UNKNOWN"),
            }
        }


#: The safety ratings of a blocked candidate or prompt: the category that blocked it is marked.
_BLOCKED_RATINGS = [
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
]


def _usage(answer: Answer) -> dict[str, Any]:
    # Google's accounting: the prompt includes its cached part; thinking is billed as output but
    # counted outside the candidates; a count of 0 is left out, as Google does.
    usage: dict[str, Any] = {"promptTokenCount": answer.input_tokens}
    if answer.output_tokens:
        usage["candidatesTokenCount"] = answer.output_tokens
    usage["totalTokenCount"] = answer.input_tokens + answer.output_tokens + answer.thinking_tokens
    if answer.thinking_tokens:
        usage["thoughtsTokenCount"] = answer.thinking_tokens
    if answer.cache_read_tokens:
        usage["cachedContentTokenCount"] = answer.cache_read_tokens
    return usage


def _thinking_budget(value: Any) -> int | None:
    """``thinkingBudget``: 0 turns thinking off, -1 (or none) leaves it to the model."""
    if value is None or value == -1:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest("thinkingBudget must be -1, 0 or a positive integer")
    return value


def _tools(raw_tools: Any) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    for raw in require_list(raw_tools, "tools"):
        tool = require_dict(raw, "tool")
        declarations = tool.get("functionDeclarations") or tool.get("function_declarations") or []
        for raw_declaration in require_list(declarations, "functionDeclarations"):
            declaration = require_dict(raw_declaration, "functionDeclaration")
            name = declaration.get("name")
            if not isinstance(name, str) or not name:
                raise BadRequest("functionDeclaration.name is required")
            schema = (
                declaration.get("parameters")
                or declaration.get("parametersJsonSchema")
                or declaration.get("parameters_json_schema")
                or {}
            )
            tools.append(
                ToolSpec(
                    name=name,
                    description=str(declaration.get("description") or ""),
                    schema=schema,
                )
            )
    return tools
