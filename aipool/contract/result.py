"""The result a producer's ``AsyncResult`` resolves to (contract v1), built in one place."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aipool.contract.completion import Completion
from aipool.contract.journey import Journey
from aipool.contract.vocabulary import ErrorCode
from aipool.tracing import current_trace_id

CONTRACT_VERSION = 1


def _base(request_id: str, journey: Journey | None, now: float | None = None) -> dict[str, Any]:
    return {
        "v": CONTRACT_VERSION,
        "request_id": request_id,
        "route": journey.route.to_dict() if journey else None,
        "attempts": [a.to_dict() for a in journey.attempts] if journey else [],
        "latency_ms": round(journey.elapsed_s(now) * 1000, 2) if journey else 0.0,
        "cached": False,
        "saved_usd": 0.0,
        "trace_id": current_trace_id(),
    }


def answered(
    request_id: str,
    journey: Journey,
    provider: str,
    completion: Completion,
    cost_usd: Decimal,
    now: float | None = None,
    *,
    saved_usd: Decimal | None = None,
) -> dict[str, Any]:
    """A model answered: ``status`` ``ok``. ``now`` is the pool's time (latency is measured
    from when the pool first saw the request, on the same clock). With ``saved_usd`` the answer
    came from the response cache: ``cached`` true, nothing billed, ``saved_usd`` what it cost
    when a provider gave it."""
    answer = {
        **_base(request_id, journey, now),
        "status": "ok",
        "content": completion.text,
        "tool_calls": [c.to_dict() for c in completion.tool_calls],
        "finish_reason": completion.finish_reason,
        "provider": provider,
        "model": completion.model,
        "usage": {
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
            "thinking_tokens": completion.thinking_tokens,
            "cache_write_tokens": completion.cache_write_tokens,
            "cache_read_tokens": completion.cache_read_tokens,
        },
        "cost_usd": float(cost_usd),
        "error": None,
    }
    if saved_usd is not None:
        answer["cached"] = True
        answer["saved_usd"] = float(saved_usd)
    return answer


def terminal(
    request_id: str, journey: Journey, provider: str, text: str, now: float | None = None
) -> dict[str, Any]:
    """No model could answer: the static answer (``fallback``) or a tool refusal (``refused``)."""
    return {
        **_base(request_id, journey, now),
        "status": "refused" if provider == "refuse" else "fallback",
        "content": text,
        "tool_calls": [],
        "finish_reason": provider,
        "provider": provider,
        "model": provider,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "cost_usd": 0.0,
        "error": None,
    }


def error(
    request_id: str, code: ErrorCode, message: str, journey: Journey | None = None
) -> dict[str, Any]:
    """The request could not be served as sent (``status`` ``error``); nothing was charged."""
    return {
        **_base(request_id, journey),
        "status": "error",
        "content": None,
        "tool_calls": [],
        "finish_reason": None,
        "provider": None,
        "model": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "cost_usd": 0.0,
        "error": {"code": code, "message": message},
    }
