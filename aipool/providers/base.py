"""The one interface every model provider implements, and helpers they share.

An adapter turns a provider-neutral :class:`~aipool.contract.Request` into its SDK's call, and the
SDK's answer back into a :class:`~aipool.contract.Completion`. SDK exceptions are mapped into
:mod:`aipool.errors` in exactly one place per adapter (its ``map_error``), so the worker decides
"next provider or not" with one ``isinstance``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Protocol

from aipool.contract import Completion, Message, Request, ToolCall
from aipool.errors import (
    ProviderBadResponse,
    ProviderError,
    ProviderTimeout,
    ProviderUnreachable,
    status_error,
)


class Provider(Protocol):
    """A model provider reached through its own SDK."""

    name: str

    def complete(
        self, request: Request, model: str, *, timeout_s: float | None = None
    ) -> Completion:
        """Ask ``model`` to answer ``request``; raise a :class:`~aipool.errors.ProviderError`."""
        ...

    def close(self) -> None:
        """Release connections (worker shutdown, tests)."""
        ...


def with_tool_call_ids(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Give every tool call and tool result an id, pairing results with calls by name.

    A conversation may have started on a provider that names no call ids (Ollama) and continue on
    one that requires them (Claude's ``tool_use_id``, OpenAI's ``tool_call_id``), so ids are made up
    deterministically where missing: ``call_<n>`` in order of appearance.
    """
    counter = 0
    pending: list[ToolCall] = []
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            calls = []
            for call in message.tool_calls:
                if not call.id:
                    call = replace(call, id=f"call_{counter}")
                counter += 1
                calls.append(call)
                pending.append(call)
            out.append(replace(message, tool_calls=tuple(calls)))
        elif message.role == "tool":
            match = next(
                (c for c in pending if c.id == message.tool_call_id)
                if message.tool_call_id
                else (c for c in pending if c.name == message.name),
                None,
            )
            if match is not None:
                pending.remove(match)
                message = replace(
                    message,
                    tool_call_id=message.tool_call_id or match.id,
                    name=message.name or match.name,
                )
            elif not message.tool_call_id:
                message = replace(message, tool_call_id=f"call_{counter}")
                counter += 1
            out.append(message)
        else:
            out.append(message)
    return tuple(out)


def map_api_error(exc: Exception, provider: str, sdk: Any) -> ProviderError:
    """Map an exception of the ``anthropic`` or ``openai`` SDK (``sdk`` is the module).

    Both SDKs share one exception hierarchy (``APITimeoutError``, ``APIConnectionError``,
    ``APIResponseValidationError``, ``APIStatusError`` with ``status_code`` and ``response``).
    """
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderTimeout(f"{provider}: no answer in time")
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderUnreachable(f"{provider}: cannot connect")
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderBadResponse(f"{provider}: answer does not match the API schema")
    if isinstance(exc, sdk.APIStatusError):
        kind = ""
        body = exc.body
        if isinstance(body, dict):
            error = body.get("error", body)
            kind = (
                str(error.get("type") or error.get("code") or "") if isinstance(error, dict) else ""
            )
        retry_after: float | None = None
        try:
            header = exc.response.headers.get("retry-after")
            retry_after = float(header) if header is not None else None
        except ValueError:
            retry_after = None
        return status_error(
            exc.status_code, f"{provider} HTTP {exc.status_code}: {kind}".strip(), retry_after
        )
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError | IndexError):
        return ProviderBadResponse(f"{provider}: unreadable answer ({type(exc).__name__})")
    return ProviderUnreachable(f"{provider}: {type(exc).__name__}")


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments arrive as a dict (Ollama, Gemini, Claude) or a JSON string (OpenAI)."""
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("tool arguments are not a JSON object")
    return value
