"""Ollama, the local model server (``/api/chat`` through the ``ollama`` client)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import ollama
from pydantic import ValidationError

from aipool import config
from aipool.contract import Completion, Request, ToolCall
from aipool.errors import (
    ProviderBadResponse,
    ProviderError,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnreachable,
    status_error,
)
from aipool.providers.base import parse_arguments


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


def map_error(exc: Exception) -> ProviderError:
    """The one place Ollama client exceptions become aipool errors."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, ollama.RequestError):
        return ProviderRejected(f"ollama: {exc.error}")
    if isinstance(exc, ollama.ResponseError):
        if exc.status_code < 0:
            return ProviderBadResponse(f"ollama: {exc.error}")
        return status_error(exc.status_code, f"ollama HTTP {exc.status_code}: {exc.error}")
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

    def __init__(self, endpoint: config.ProviderEndpoint | None = None) -> None:
        self.endpoint = endpoint or config.ProviderEndpoint.for_provider("ollama")
        # One client per process: building one costs ~20 ms, a reused one ~0.6 ms per call.
        self._client = ollama.Client(host=self.endpoint.base_url, timeout=self.endpoint.timeout_s)

    def close(self) -> None:
        """Release the SDK client's connection pool."""
        self._client.close()

    def complete(
        self, request: Request, model: str, *, timeout_s: float | None = None
    ) -> Completion:
        options: dict[str, Any] = {"num_predict": request.max_tokens}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        started = time.perf_counter()
        try:
            response = self._client.chat(
                model=model,
                messages=to_ollama_messages(request),
                tools=to_ollama_tools(request),
                options=options,
                stream=False,
            )
            calls = [
                ToolCall(name=c.function.name, arguments=parse_arguments(c.function.arguments))
                for c in (response.message.tool_calls or [])
            ]
            return Completion(
                text=response.message.content or "",
                model=model,
                input_tokens=response.prompt_eval_count or 0,
                output_tokens=response.eval_count or 0,
                tool_calls=calls,
                finish_reason="tool_calls" if calls else (response.done_reason or "stop"),
                latency_ms=(time.perf_counter() - started) * 1000,
            )
        except Exception as exc:
            raise map_error(exc) from exc
