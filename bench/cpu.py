"""CPU a long prompt costs the pool: the token estimate, a hop's own work, and routing.

Measured in this process with the thread's CPU clock (other processes' load does not count), median
of many runs, for prompts of about 100 KB in four shapes: English prose, an unfenced log paste,
a fenced log paste under a question, and mixed Chinese and English. The CJK prompt is 30,000
characters (about 90 KB of UTF-8): 100 KB of CJK is over the contract's 32,000-token limit.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from bench.figures import Figure, Report

HOP_CPU_MS = 2.0
DECIDE_MS = 5.0
_LOG = (
    "2026-11-30T10:00:01Z ERROR payment-api-7d9f pod OOMKilled, restarting container (exit 137)\n"
)
_PROSE = "The payment service has been slow since this morning and customers see timeouts. "
PROMPTS = {
    "english prose": _PROSE * 1250,
    "unfenced log": "Summarise this:\n" + _LOG * 1100,
    "fenced log": "Why does payment-api keep crashing?\n```\n" + _LOG * 1100 + "```\n",
    "mixed zh/en": ("為什麼 payment-api 一直 CrashLoopBackOff？幫我看一下這個告警。 " + _PROSE * 3)
    * 350,
    "CJK": "為什麼支付服務一直重啟，幫我看一下這個告警是不是跟資料庫有關。" * 1000,
}
SHORT = "What is a pod?"


def cpu_ms(call: Callable[[], Any], runs: int) -> float:
    """Median thread CPU milliseconds of ``call`` over ``runs`` runs (after one warm-up)."""
    call()
    samples = []
    for _ in range(runs):
        started = time.thread_time_ns()
        call()
        samples.append((time.thread_time_ns() - started) / 1e6)
    return statistics.median(samples)


def _hop_work(raw: dict[str, Any]) -> None:
    """What every hop does with the prompt it carries: validate it and estimate its tokens."""
    from aipool.contract.request import parse_request

    request = parse_request(raw)
    request.estimated_total_tokens()
    request.estimated_input_tokens()


def _json_round_trip(raw: dict[str, Any]) -> None:
    json.loads(json.dumps({"request": raw}))


def cpu(report: Report, runs: int) -> None:
    """Token estimate, hop work and ``decide()`` on ~100 KB prompts, against a short prompt."""
    from aipool.contract.request import parse_request
    from aipool.routing.router import decide
    from aipool.routing.text import HEAD_CHARS, TAIL_CHARS
    from aipool.tokens import estimate_tokens

    short_hop = cpu_ms(lambda: _hop_work({"prompt": SHORT}), runs)
    short_request = parse_request({"prompt": SHORT})
    short_decide = cpu_ms(partial(decide, short_request), runs)
    worst_hop = worst_decide = 0.0
    details_hop: dict[str, float] = {}
    details_decide: dict[str, float] = {}
    details_estimate: dict[str, float] = {}
    details_celery: dict[str, float] = {}
    for shape, text in PROMPTS.items():
        raw = {"prompt": text}
        request = parse_request(raw)
        details_estimate[shape] = cpu_ms(partial(estimate_tokens, text), runs) * 1000
        hop = cpu_ms(partial(_hop_work, raw), runs) - short_hop
        routed = cpu_ms(partial(decide, request), runs)
        # Celery's own share: the kwargs' JSON, encoded by the sender and decoded by the worker.
        details_celery[shape] = cpu_ms(partial(_json_round_trip, raw), runs)
        details_hop[shape] = hop
        details_decide[shape] = routed
        worst_hop = max(worst_hop, hop)
        worst_decide = max(worst_decide, routed)
    sizes = {shape: len(text.encode()) for shape, text in PROMPTS.items()}
    report.add(
        Figure(
            "cpu",
            "estimate_tokens on ~100 KB (worst shape)",
            max(details_estimate.values()),
            "µs",
            details={"per_shape_us": details_estimate, "utf8_bytes": sizes},
        )
    )
    report.add(
        Figure(
            "cpu",
            "CPU a ~100 KB prompt adds to a hop (validate + estimate, worst shape)",
            worst_hop,
            "ms",
            f"< {HOP_CPU_MS} ms",
            worst_hop < HOP_CPU_MS,
            short_hop,
            "short prompt's hop work",
            {"per_shape_ms": details_hop, "celery_json_round_trip_ms": details_celery},
        )
    )
    report.add(
        Figure(
            "cpu",
            "decide() on a ~100 KB prompt (worst shape)",
            worst_decide,
            "ms",
            f"< {DECIDE_MS} ms",
            worst_decide < DECIDE_MS,
            short_decide,
            "short prompt",
            {"per_shape_ms": details_decide, "reads_head_and_tail_chars": [HEAD_CHARS, TAIL_CHARS]},
        )
    )
