"""Google Gemini through ``google-genai`` (``models/{model}:generateContent``)."""

from __future__ import annotations

import json
import math
import time
from typing import Any

import httpx
import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import ValidationError

from aipool.contract.request import Completion, Request, ToolCall
from aipool.errors import (
    ProviderAuthError,
    ProviderBadResponse,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
    status_error,
    task_time_limit,
)
from aipool.providers.base import (
    building_request,
    call_timeout,
    checked_usage,
    parse_retry_after,
    request_error,
    scrubbed,
    token_part,
    with_tool_call_ids,
)
from aipool.providers.endpoint import ProviderEndpoint
from aipool.secrets import read_secret

_FINISH = {"STOP": "stop", "MAX_TOKENS": "length"}


def to_gemini_contents(request: Request) -> list[types.Content]:
    """Gemini speaks in ``user``/``model`` turns; tool results are ``functionResponse`` parts."""
    contents: list[types.Content] = []
    for m in with_tool_call_ids(request.messages):
        if m.role == "tool":
            try:
                payload = json.loads(m.content)
            except ValueError:
                payload = m.content
            response = payload if isinstance(payload, dict) else {"result": payload}
            part = types.Part(
                function_response=types.FunctionResponse(name=m.name, response=response)
            )
            contents.append(types.Content(role="user", parts=[part]))
        elif m.role == "assistant":
            parts = [types.Part(text=m.content)] if m.content else []
            parts.extend(
                types.Part(function_call=types.FunctionCall(name=c.name, args=c.arguments))
                for c in m.tool_calls
            )
            contents.append(types.Content(role="model", parts=parts))
        else:
            contents.append(types.Content(role="user", parts=[types.Part(text=m.content)]))
    return contents


def to_gemini_config(request: Request, timeout_s: float) -> types.GenerateContentConfig:
    tools: list[Any] | None = None
    if request.tools:
        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.parameters
            )
            for t in request.tools
        ]
        tools = [types.Tool(function_declarations=declarations)]
    return types.GenerateContentConfig(
        system_instruction=request.system or None,
        max_output_tokens=request.max_tokens,
        temperature=request.temperature,
        tools=tools,
        # The pool, not the SDK, decides what a tool call does: never run functions locally.
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        http_options=types.HttpOptions(timeout=_milliseconds(timeout_s)),
    )


def map_error(exc: Exception) -> ProviderError:
    """The one place google-genai exceptions become aipool errors."""
    if (timed_out := task_time_limit(exc)) is not None:
        return timed_out
    if isinstance(exc, ProviderError):
        return scrubbed(exc)
    unsent = request_error(exc, "gemini")
    if unsent is not None:
        return unsent
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 500)
        # Google's message is the provider's own text: it goes through the scrubber.
        detail = f"{exc.status or ''} {exc.message or ''}".strip()
        # Google answers a bad key with 400 API_KEY_INVALID: that is the pool's fault, not the request's.
        if code == 400 and "API_KEY" in str(exc.message or "").upper():
            return scrubbed(ProviderAuthError(f"gemini HTTP {code}: {exc.status}", status=code))
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(headers.get("retry-after")) if headers else None
        return scrubbed(status_error(code, f"gemini HTTP {code}: {detail}".strip(), retry_after))
    if isinstance(exc, httpx2.TimeoutException | httpx.TimeoutException | TimeoutError):
        return ProviderTimeout(f"gemini: no answer in time ({type(exc).__name__})")
    if isinstance(exc, httpx2.NetworkError | httpx.NetworkError | ConnectionError):
        return ProviderUnreachable("gemini: cannot connect")
    if isinstance(exc, ValueError | ValidationError | KeyError | TypeError | httpx2.DecodingError):
        return ProviderBadResponse(f"gemini: unreadable answer ({type(exc).__name__})")
    return ProviderUnreachable(f"gemini: {type(exc).__name__}")


class GeminiProvider:
    """Gemini, the first cloud fallback (ADR-006 priority 2)."""

    name = "gemini"

    def __init__(self, endpoint: ProviderEndpoint | None = None) -> None:
        self.endpoint = endpoint or ProviderEndpoint.for_provider("gemini")
        self._client = genai.Client(
            api_key=read_secret("GEMINI_API_KEY") or "missing-key",
            http_options=types.HttpOptions(
                base_url=self.endpoint.base_url,
                api_version="v1beta",
                timeout=_milliseconds(self.endpoint.timeout_s),
            ),
        )

    def close(self) -> None:
        """Release the SDK client's connection pool."""
        self._client.close()

    def complete(
        self, request: Request, model: str, *, timeout_s: float | None = None
    ) -> Completion:
        started = time.perf_counter()
        try:
            with building_request():
                contents = to_gemini_contents(request)
                generation = to_gemini_config(
                    request, call_timeout(timeout_s, self.endpoint.timeout_s)
                )
            response = self._client.models.generate_content(
                model=model, contents=contents, config=generation
            )
            candidates = response.candidates or []
            if not candidates or candidates[0].content is None:
                raise ProviderBadResponse("gemini: answer without candidates")
            parts = candidates[0].content.parts or []
            text = "".join(p.text for p in parts if p.text and not p.thought)
            calls = [
                ToolCall(
                    name=p.function_call.name or "", arguments=dict(p.function_call.args or {})
                )
                for p in parts
                if p.function_call is not None
            ]
            usage = response.usage_metadata
            # Google bills thinking as output, outside candidates_token_count, and tool results
            # fed back to the model as input, outside prompt_token_count (which includes the
            # cached content): total_token_count is the sum of the four.
            thoughts = token_part(
                self.name, "thoughts_token_count", _get(usage, "thoughts_token_count")
            )
            tool_prompt = token_part(
                self.name, "tool_use_prompt_token_count", _get(usage, "tool_use_prompt_token_count")
            )
            prompt = _get(usage, "prompt_token_count")
            answered = _get(usage, "candidates_token_count")
            if answered is None and thoughts:
                answered = 0  # Google leaves the count out when thinking used every token
            input_tokens, output_tokens = checked_usage(
                self.name,
                request,
                None if prompt is None else prompt + tool_prompt,
                None if answered is None else answered + thoughts,
                text,
                calls,
            )
            cached = token_part(
                self.name, "cached_content_token_count", _get(usage, "cached_content_token_count")
            )
            finish = candidates[0].finish_reason
            finish_name = finish.value if finish is not None else "STOP"
            return Completion(
                text=text,
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                tool_calls=calls,
                finish_reason="tool_calls"
                if calls
                else _FINISH.get(finish_name, finish_name.lower()),
                latency_ms=(time.perf_counter() - started) * 1000,
                thinking_tokens=min(thoughts, output_tokens),
                cache_read_tokens=min(cached, input_tokens),
            )
        except Exception as exc:
            raise map_error(exc) from exc


def _get(usage: Any, name: str) -> Any:
    return getattr(usage, name, None) if usage is not None else None


def _milliseconds(seconds: float) -> int:
    # google-genai takes whole milliseconds; never round a short deadline down to 0 (no timeout).
    return max(1, math.ceil(seconds * 1000))
