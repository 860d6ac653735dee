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

from aipool.contract.completion import Completion, ToolCall
from aipool.contract.request import Request
from aipool.errors import (
    PromptBlocked,
    ProviderAuthError,
    ProviderBadResponse,
    ProviderError,
    ProviderModelMissing,
    ProviderTimeout,
    ProviderUnreachable,
    status_error,
    task_time_limit,
)
from aipool.providers.base import (
    building_request,
    call_timeout,
    checked_usage,
    missing_model,
    provider_words,
    request_error,
    scrubbed,
    token_part,
    unrunnable_call,
    usable,
    with_tool_call_ids,
)
from aipool.providers.endpoint import ProviderEndpoint
from aipool.providers.retry_delay import declared_delay
from aipool.secrets import read_secret

#: ``CONTINUATION``: "the response reached the per-request token limit, but generation is not
#: yet complete" (``types.FinishReason``): a truncated answer, as every provider's length stop.
_FINISH = {"STOP": "stop", "MAX_TOKENS": "length", "CONTINUATION": "length"}
#: Finish reasons that mean Google withheld what the model generated: the answer is not the
#: model's, whatever text came with it (``types.FinishReason``; ``ESCALATION``: "filtered by an
#: escalation rule", ``LANGUAGE``: "flagged for using an unsupported language").
WITHHELD = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "ESCALATION",
    }
)
#: Finish reasons that say the model's function call cannot be run (``types.FinishReason``):
#: ``MALFORMED_FUNCTION_CALL``, "a function call that is syntactically invalid and can't be
#: parsed" (the candidate comes without content, or with the text written before the call, the
#: prompt billed), and ``UNEXPECTED_TOOL_CALL``, "semantically invalid ... the generated function
#: is not in the function declaration" (the undeclared call comes in the parts, its name in
#: ``finishMessage``). The model's slip on this request: never an answer, never the provider's
#: health.
CALL_STOPS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})
#: The finish reasons that end an answer: a natural stop, or the output limit (``MAX_TOKENS``,
#: ``CONTINUATION``, read as ``length``). Every other reason that is neither withheld, a broken
#: call nor the account's (``OTHER``: "stopped for a reason not otherwise specified",
#: ``MALFORMED_RESPONSE``, ``MISSING_THOUGHT_SIGNATURE``, ``TOO_MANY_TOOL_CALLS``, a reason newer
#: than the SDK) ends no answer the pool can vouch for, whatever text came before it.
ANSWER_STOPS = frozenset({"STOP", "MAX_TOKENS", "CONTINUATION", "FINISH_REASON_UNSPECIFIED"})
#: Finish reasons that refuse the pool's account, not the request: "the user account is limited
#: or disabled due to Prohibited Use Policy (PUP) violations". Every request stops the same way
#: until a person acts: counted against Gemini as a refused key is.
ACCOUNT_STOPS = frozenset({"PUP_LIMITED_DISABLED"})
#: Why Google refuses the pool's key (``google.rpc.ErrorInfo.reason`` in a 400's details: a
#: wrong or expired key is ``API_KEY_INVALID``) or its account (a 400 ``FAILED_PRECONDITION``:
#: "Gemini API free tier is not available in your country. Please enable billing", "User
#: location is not supported for the API use"; Google's troubleshooting guide).
_KEY_REASONS = ("API_KEY_",)
_ACCOUNT_STATUSES = frozenset({"FAILED_PRECONDITION"})
#: Gemini 2.5 Pro cannot stop thinking: its smallest budget (Google's thinking guide).
PRO_MIN_THINKING = 128
#: Gemini 2.5 Flash-Lite thinks only from this budget up; below it, not at all.
LITE_MIN_THINKING = 512


def thinking_config(model: str, budget: int | None) -> types.ThinkingConfig | None:
    """The thinking budget sent to ``model``: only Gemini 2.5 takes one (older models refuse
    the field), and only within what each model allows; ``None`` sends nothing (the model
    thinks as it likes)."""
    name = model.lower().removeprefix("models/")
    if budget is None or not name.startswith("gemini-2.5"):
        return None
    if "pro" in name:
        budget = max(budget, PRO_MIN_THINKING)
    elif "lite" in name and budget < LITE_MIN_THINKING:
        budget = 0
    return types.ThinkingConfig(thinking_budget=budget)


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


def to_gemini_config(
    request: Request, timeout_s: float, thinking: types.ThinkingConfig | None = None
) -> types.GenerateContentConfig:
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
        thinking_config=thinking,
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
        detail = provider_words(exc.details) or f"{exc.status or ''} {exc.message or ''}".strip()
        message = f"gemini HTTP {code}: {detail}".strip()
        # A refused key or account is the pool's fault, not the request's (see _KEY_REASONS).
        if code == 400 and _refuses_key(exc.details):
            return scrubbed(ProviderAuthError(f"gemini HTTP {code}: {exc.status}", status=code))
        if code == 400 and exc.status in _ACCOUNT_STATUSES:
            return scrubbed(ProviderAuthError(message, status=code))
        if missing_model(code, detail):
            return scrubbed(ProviderModelMissing(message, status=code))
        response = getattr(exc, "response", None)
        # Google declares a 429's delay in the body (RetryInfo), not in a Retry-After header.
        retry_after = declared_delay(getattr(response, "headers", None), exc.details)
        return scrubbed(status_error(code, message, retry_after))
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
                contents = to_gemini_contents(request)
                generation = to_gemini_config(
                    request,
                    call_timeout(timeout_s, self.endpoint.timeout_s),
                    thinking_config(model, thinking_budget),
                )
            response = self._client.models.generate_content(
                model=model, contents=contents, config=generation
            )
            return self._answer(request, model, response, started)
        except Exception as exc:
            raise map_error(exc) from exc

    def _answer(self, request: Request, model: str, response: Any, started: float) -> Completion:
        """The answer in ``response``, or why there is none (each case billed as reported)."""
        candidates = response.candidates or []
        candidate = candidates[0] if candidates else None
        parts = (candidate.content.parts if candidate and candidate.content else None) or []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        calls = [
            ToolCall(name=p.function_call.name or "", arguments=dict(p.function_call.args or {}))
            for p in parts
            if p.function_call is not None
        ]
        usage = response.usage_metadata
        # Google bills thinking as output, outside candidates_token_count, and tool results
        # fed back to the model as input, outside prompt_token_count (which includes the
        # cached content): total_token_count is the sum of the four, and is checked against it.
        thoughts = token_part(
            self.name, "thoughts_token_count", _get(usage, "thoughts_token_count")
        )
        tool_prompt = token_part(
            self.name, "tool_use_prompt_token_count", _get(usage, "tool_use_prompt_token_count")
        )
        prompt = _get(usage, "prompt_token_count")
        answered = _get(usage, "candidates_token_count")
        if answered is None and (thoughts or candidate is None or not parts):
            answered = 0  # Google leaves the count out when nothing visible was generated
        input_tokens, output_tokens = checked_usage(
            self.name,
            request,
            None if prompt is None else prompt + tool_prompt,
            None if answered is None else answered + thoughts,
            text,
            calls,
            total=_get(usage, "total_token_count"),
        )
        cached = token_part(
            self.name, "cached_content_token_count", _get(usage, "cached_content_token_count")
        )
        finish = candidate.finish_reason if candidate is not None else None
        finish_name = finish.value if finish is not None else "STOP"
        completion = Completion(
            text=text,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else _FINISH.get(finish_name, finish_name.lower()),
            latency_ms=(time.perf_counter() - started) * 1000,
            thinking_tokens=min(thoughts, output_tokens),
            cache_read_tokens=min(cached, input_tokens),
        )
        if candidate is None:
            feedback = response.prompt_feedback
            reason = _get(feedback, "block_reason")
            if reason is None:
                raise ProviderBadResponse("gemini: answer without candidates")
            said = _get(feedback, "block_reason_message")
            raise PromptBlocked(
                f"gemini: the prompt was blocked ({getattr(reason, 'value', reason)}"
                + (f": {said}" if said else "")
                + ")",
                billed=completion,
            )
        if finish_name in ACCOUNT_STOPS:
            raise ProviderAuthError(f"gemini: the account is refused ({finish_name})")
        unrunnable = unrunnable_call(calls, request)
        if finish_name in WITHHELD:
            said = candidate.finish_message
            return usable(
                self.name, completion, withheld=finish_name + (f": {said}" if said else "")
            )
        if finish_name in CALL_STOPS:
            # Google's reason, never its finishMessage: that quotes the broken call's text.
            broken = finish_name + (f": {unrunnable}" if unrunnable else "")
            return usable(self.name, completion, broken_call=broken)
        return usable(
            self.name,
            completion,
            broken_call=unrunnable,
            stopped=None if finish_name in ANSWER_STOPS else finish_name,
        )


def _refuses_key(body: Any) -> bool:
    """Whether Google's error ``body`` refuses the key: an ``ErrorInfo`` detail whose reason is
    one of :data:`_KEY_REASONS` (the message says "API key not valid" or "API key expired")."""
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    return any(
        isinstance(detail, dict) and str(detail.get("reason", "")).startswith(_KEY_REASONS)
        for detail in (details if isinstance(details, list) else ())
    )


def _get(usage: Any, name: str) -> Any:
    return getattr(usage, name, None) if usage is not None else None


def _milliseconds(seconds: float) -> int:
    # google-genai takes whole milliseconds; never round a short deadline down to 0 (no timeout).
    return max(1, math.ceil(seconds * 1000))
