"""Ollama, the local model server (``/api/chat`` through the ``ollama`` client)."""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx
import ollama
from pydantic import ValidationError

from aipool.contract.completion import Completion, ToolCall
from aipool.contract.request import Request
from aipool.errors import (
    ProviderBadResponse,
    ProviderError,
    ProviderModelMissing,
    ProviderRejected,
    ProviderTimeout,
    ProviderToolsUnsupported,
    ProviderUnreachable,
    status_error,
    task_time_limit,
)
from aipool.providers.base import (
    building_request,
    call_as_text,
    call_timeout,
    checked_usage,
    missing_model,
    parse_arguments,
    provider_words,
    request_error,
    scrubbed,
    tools_unsupported,
    unrunnable_call,
    usable,
    without_thinking,
)
from aipool.providers.endpoint import ProviderEndpoint
from aipool.providers.retry_delay import declared_delay


def to_ollama_messages(request: Request) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for m in request.messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.tool_calls:
            item["tool_calls"] = [
                {"function": {"name": c.name, "arguments": c.arguments}} for c in m.tool_calls
            ]
        if m.role == "tool" and m.name:
            item["tool_name"] = m.name
        messages.append(item)
    return messages


def to_ollama_tools(request: Request) -> list[dict[str, Any]] | None:
    if not request.tools:
        return None
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in request.tools
    ]


@dataclass
class _Call:
    """What one ``chat`` call needs from the HTTP layer, and what it learns there."""

    timeout_s: float
    retry_after: float | None = None


# The ollama client takes its timeout when it is built and passes none per call, and its errors
# keep only the status and body. httpx's event hooks see every request and response of the
# reused client: they set this call's timeout (the request's ``timeout`` extension, which the
# transport reads) and keep its Retry-After. A context variable keeps concurrent calls apart.
_CALL: ContextVar[_Call | None] = ContextVar("aipool_ollama_call", default=None)


def _bound_timeout(request: httpx.Request) -> None:
    call = _CALL.get()
    if call is not None:
        request.extensions["timeout"] = httpx.Timeout(call.timeout_s).as_dict()


def _keep_retry_after(response: httpx.Response) -> None:
    call = _CALL.get()
    if call is not None:
        call.retry_after = declared_delay(response.headers)


def map_error(exc: Exception, retry_after: float | None = None) -> ProviderError:
    """The one place Ollama client exceptions become aipool errors.

    ``retry_after`` is the Retry-After header of the answer, which the client's exception lacks.
    """
    if (timed_out := task_time_limit(exc)) is not None:
        return timed_out
    if isinstance(exc, ProviderError):
        return scrubbed(exc)
    unsent = request_error(exc, "ollama")
    if unsent is not None:
        return unsent
    if isinstance(exc, ollama.RequestError):
        return scrubbed(ProviderRejected(f"ollama: {exc.error}"))
    if isinstance(exc, ollama.ResponseError):
        # ``exc.error`` is the server's body text: it goes through the scrubber.
        if exc.status_code < 0:
            return scrubbed(ProviderBadResponse(f"ollama: {exc.error}"))
        words = provider_words(str(exc.error))
        message = f"ollama HTTP {exc.status_code}: {words}"
        if missing_model(exc.status_code, words):
            # The model name comes from the route table: every request would fail the same way.
            return scrubbed(ProviderModelMissing(message, status=exc.status_code))
        if tools_unsupported(exc.status_code, words):
            return scrubbed(ProviderToolsUnsupported(message, status=exc.status_code))
        return scrubbed(status_error(exc.status_code, message, retry_after))
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(f"ollama: no answer in time ({type(exc).__name__})")
    if isinstance(exc, ConnectionError | httpx.NetworkError):
        return ProviderUnreachable("ollama: cannot connect")
    if isinstance(exc, ValueError | ValidationError | httpx.DecodingError | KeyError | TypeError):
        return ProviderBadResponse(f"ollama: unreadable answer ({type(exc).__name__})")
    return ProviderUnreachable(f"ollama: {type(exc).__name__}")


class OllamaProvider:
    """Local models on an Ollama server; no key, no quota, tools through Ollama's own format."""

    name = "ollama"

    def __init__(self, endpoint: ProviderEndpoint | None = None) -> None:
        self.endpoint = endpoint or ProviderEndpoint.for_provider("ollama")
        # One client per process: building one costs ~20 ms, a reused one ~0.6 ms per call.
        self._client = ollama.Client(
            host=self.endpoint.base_url,
            timeout=self.endpoint.timeout_s,
            event_hooks={"request": [_bound_timeout], "response": [_keep_retry_after]},
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
        # Local models are free and Ollama takes no thinking budget (only think on or off):
        # thinking_budget is not sent.
        started = time.perf_counter()
        call = _Call(call_timeout(timeout_s, self.endpoint.timeout_s))
        token = _CALL.set(call)
        try:
            with building_request():
                options: dict[str, Any] = {"num_predict": request.max_tokens}
                if request.temperature is not None:
                    options["temperature"] = request.temperature
                messages = to_ollama_messages(request)
                tools = to_ollama_tools(request)
            response = self._client.chat(
                model=model, messages=messages, tools=tools, options=options, stream=False
            )
            calls = [
                ToolCall(name=c.function.name, arguments=parse_arguments(c.function.arguments))
                for c in (response.message.tool_calls or [])
            ]
            said = response.message.content or ""
            text = without_thinking(said)
            # Ollama leaves prompt_eval_count out when the prompt came from its cache; eval_count
            # counts every generated token, a thinking model's thinking included (Ollama reports
            # no separate count of it, and a local model costs nothing).
            input_tokens, output_tokens = checked_usage(
                self.name, request, response.prompt_eval_count, response.eval_count, said, calls
            )
            # A thinking model whose thinking used num_predict answers with thinking only.
            return usable(
                self.name,
                Completion(
                    text=text,
                    model=model,
                    input_tokens=input_tokens,
                    output_tokens=output_tokens,
                    tool_calls=calls,
                    finish_reason="tool_calls" if calls else (response.done_reason or "stop"),
                    latency_ms=(time.perf_counter() - started) * 1000,
                ),
                broken_call=unrunnable_call(calls, request) or call_as_text(text, request),
            )
        except Exception as exc:
            raise map_error(exc, call.retry_after) from exc
        finally:
            _CALL.reset(token)
