"""NVIDIA Nemotron through its OpenAI-compatible API (``openai`` SDK, ``/v1/chat/completions``)."""

from __future__ import annotations

import json
import time
from typing import Any

import openai

from aipool.contract.completion import Completion, ToolCall
from aipool.contract.request import Request
from aipool.errors import ProviderBadResponse, ProviderError
from aipool.providers.base import (
    building_request,
    call_as_text,
    call_timeout,
    checked_usage,
    cut_call,
    map_api_error,
    read_arguments,
    token_part,
    unrunnable_call,
    usable,
    with_tool_call_ids,
    without_thinking,
)
from aipool.providers.endpoint import ProviderEndpoint
from aipool.secrets import read_secret
from aipool.settings import settings


def to_openai_messages(request: Request) -> list[dict[str, Any]]:
    # Reasoning off for tool calls (AIPOOL_NEMOTRON_SYSTEM_PREFIX, see aipool.settings.model).
    prefix = settings().nemotron_system_prefix
    system = "\n".join(s for s in (prefix, request.system) if s)
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in with_tool_call_ids(request.messages):
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_openai_tools(request: Request) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in request.tools
    ]


def map_error(exc: Exception) -> ProviderError:
    """The one place openai SDK exceptions become aipool errors."""
    return map_api_error(exc, "nemotron", openai)


class NemotronProvider:
    """NVIDIA Nemotron, first hop of tool-calling requests (ADR-006 §8)."""

    name = "nemotron"

    def __init__(self, endpoint: ProviderEndpoint | None = None) -> None:
        self.endpoint = endpoint or ProviderEndpoint.for_provider("nemotron")
        self._client = openai.OpenAI(
            api_key=read_secret("NVIDIA_API_KEY") or "missing-key",
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
        # Nemotron takes its reasoning mode from the system prompt (AIPOOL_NEMOTRON_SYSTEM_PREFIX),
        # not from a budget: thinking_budget is not sent.
        started = time.perf_counter()
        try:
            with building_request():
                kwargs: dict[str, Any] = {}
                if request.tools:
                    kwargs["tools"] = to_openai_tools(request)
                if request.temperature is not None:
                    kwargs["temperature"] = request.temperature
                messages = to_openai_messages(request)
            response = self._client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                max_tokens=request.max_tokens,
                timeout=call_timeout(timeout_s, self.endpoint.timeout_s),
                **kwargs,
            )
            if not response.choices:
                raise ProviderBadResponse("nemotron: answer without choices")
            choice = response.choices[0]
            calls: list[ToolCall] = []
            unreadable: str | None = None
            for c in choice.message.tool_calls or []:
                if c.type != "function":
                    continue
                arguments, why = read_arguments(c.function.arguments)
                unreadable = unreadable or why
                calls.append(ToolCall(name=c.function.name, arguments=arguments, id=c.id))
            said = choice.message.content or ""
            text = without_thinking(said)
            usage = response.usage
            # OpenAI's format: prompt_tokens includes cached input, completion_tokens includes
            # reasoning; the details say how many of each. Some OpenAI-compatible servers bill
            # hidden reasoning in total_tokens only: the total is checked against the parts.
            input_tokens, output_tokens = checked_usage(
                self.name,
                request,
                getattr(usage, "prompt_tokens", None),
                getattr(usage, "completion_tokens", None),
                said,  # an estimate, when usage is missing, counts the thinking generated too
                calls,
                total=getattr(usage, "total_tokens", None),
            )
            prompt_details = getattr(usage, "prompt_tokens_details", None)
            completion_details = getattr(usage, "completion_tokens_details", None)
            reasoning = token_part(
                self.name, "reasoning_tokens", getattr(completion_details, "reasoning_tokens", None)
            )
            cached = token_part(
                self.name, "cached_tokens", getattr(prompt_details, "cached_tokens", None)
            )
            written = token_part(
                self.name, "cache_write_tokens", getattr(prompt_details, "cache_write_tokens", None)
            )
            completion = Completion(
                text=text,
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                tool_calls=calls,
                finish_reason="tool_calls" if calls else (choice.finish_reason or "stop"),
                latency_ms=(time.perf_counter() - started) * 1000,
                thinking_tokens=min(reasoning, output_tokens),
                cache_write_tokens=min(written, input_tokens),
                cache_read_tokens=min(cached, input_tokens - min(written, input_tokens)),
            )
            # OpenAI's content filter withholds the answer; a refusal comes as message.refusal;
            # a length stop cuts the last tool call, whether or not what came of it parses.
            return usable(
                self.name,
                completion,
                withheld="content_filter" if choice.finish_reason == "content_filter" else None,
                refused=bool(getattr(choice.message, "refusal", None)),
                broken_call=unreadable
                or cut_call(choice.finish_reason or "stop", calls, request.max_tokens)
                or unrunnable_call(calls, request)
                or call_as_text(text, request),
            )
        except Exception as exc:
            raise map_error(exc) from exc
