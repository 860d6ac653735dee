"""Ollama's native API: ``POST /api/chat`` plus the ``/api/tags`` and ``/api/version`` probes."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
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

#: Models ``/api/tags`` lists: the ids ADR-006 routes to.
LISTED_MODELS = ("llama3.2:3b", "qwen2.5:7b-instruct")
VERSION = "0.6.3"

# Synthetic timings (nanoseconds) that make durations scale with tokens, as on a local GPU.
_LOAD_NS = 5_000_000
_PROMPT_NS_PER_TOKEN = 400_000
_EVAL_NS_PER_TOKEN = 12_000_000


class OllamaWire(WireProtocol):
    """Ollama: no auth, ``{"error": "..."}`` errors, tool arguments as JSON objects."""

    kind = "ollama"

    def is_generation(self, method: str, path: str) -> bool:
        return method == "POST" and path == "/api/chat"

    def probe(self, method: str, path: str) -> Any | None:
        if method in ("GET", "HEAD") and path == "/api/version":
            return {"version": VERSION}
        if method in ("GET", "HEAD") and path == "/api/tags":
            return {"models": [_model_entry(name) for name in LISTED_MODELS]}
        if method in ("GET", "HEAD") and path == "/":
            return "Ollama is running"
        return None

    def parse(self, path: str, body: Any) -> Exchange:
        request = require_dict(body, "request body")
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model is required")
        messages = require_list(request.get("messages", []), "messages")
        texts: list[str] = []
        last_user = ""
        for raw in messages:
            message = require_dict(raw, "message")
            text = text_of(message.get("content"))
            texts.append(text)
            if message.get("role") == "user":
                last_user = text
        tool_result = None
        if messages and messages[-1].get("role") == "tool":
            last = messages[-1]
            name = str(last.get("tool_name") or last.get("name") or _last_tool_called(messages))
            tool_result = ToolResult(name=name or "tool", content=text_of(last.get("content")))
        options = request.get("options") or {}
        limit = optional_limit(require_dict(options, "options").get("num_predict"), "num_predict")
        # Ollama reads num_predict -1 / -2 as "no limit"; only a positive value limits.
        return Exchange(
            model=model,
            texts=tuple(texts),
            message_count=len(messages),
            last_user_text=last_user,
            tools=tuple(_tool(raw) for raw in require_list(request.get("tools") or [], "tools")),
            tool_result=tool_result,
            max_tokens=limit,
        )

    def render(self, exchange: Exchange, answer: Answer) -> Any:
        # eval_count counts every generated token, a thinking model's thinking included.
        generated = answer.output_tokens + answer.thinking_tokens
        prompt_ns = _PROMPT_NS_PER_TOKEN * answer.input_tokens
        eval_ns = _EVAL_NS_PER_TOKEN * generated
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.withheld == "thinking_exhausted":
            # num_predict spent thinking: the thinking, and no answer.
            message = {"role": "assistant", "content": "", "thinking": "(simulated thinking)"}
        elif answer.withheld is not None:
            # Ollama has no safety or refusal stop: the nearest it sends is an empty answer.
            message = {"role": "assistant", "content": ""}
        if answer.call_fault == "unparsed_call":
            # nemotron-mini's own call format, which Ollama passed on as text (ollama#6870).
            call = answer.tool_calls[0]
            written = json.dumps({"name": call.name, "arguments": call.arguments})
            message = {"role": "assistant", "content": f" <toolcall> {written} </toolcall>"}
        elif answer.tool_calls and answer.withheld is None:
            message["tool_calls"] = [
                {"function": {"name": call.name, "arguments": call.wire_arguments()}}
                for call in answer.tool_calls
            ]
        body: dict[str, Any] = {
            "model": exchange.model,
            "created_at": _now(),
            "message": message,
            "done": True,
            "done_reason": "length"
            if answer.truncated or answer.withheld == "thinking_exhausted"
            else "stop",
            "total_duration": _LOAD_NS + prompt_ns + eval_ns,
            "load_duration": _LOAD_NS,
        }
        if answer.usage_reported:
            body.update(
                prompt_eval_count=answer.input_tokens,
                prompt_eval_duration=prompt_ns,
                eval_count=generated,
                eval_duration=eval_ns,
            )
        return body

    def error_body(self, kind: ErrorKind, status: int, message: str) -> Any:
        return {"error": message}

    def tools_unsupported(self, model: str) -> Reply | None:
        name = model if "/" in model else f"registry.ollama.ai/library/{model}"
        return self.error("bad_request", f"{name} does not support tools")

    def model_missing(self, model: str) -> Reply:
        return self.error("not_found", f"model '{model}' not found, try pulling it first")


def _tool(raw: Any) -> ToolSpec:
    tool = require_dict(raw, "tool")
    function = require_dict(tool.get("function"), "tool.function")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("tool.function.name is required")
    return ToolSpec(
        name=name,
        description=str(function.get("description") or ""),
        schema=function.get("parameters") or {},
    )


def _last_tool_called(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                name = (call.get("function") or {}).get("name") if isinstance(call, dict) else None
                if isinstance(name, str):
                    return name
    return ""


def _model_entry(name: str) -> dict[str, Any]:
    family, _, size = name.partition(":")
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 2_000_000_000,
        "digest": "0" * 64,
        "details": {
            "format": "gguf",
            "family": family,
            "parameter_size": size.split("-")[0].upper() or "unknown",
            "quantization_level": "Q4_K_M",
        },
    }


def _now() -> str:
    # Ollama sends RFC 3339 with nanoseconds; microseconds parse the same in every client.
    return datetime.fromtimestamp(time.time(), UTC).isoformat().replace("+00:00", "Z")
