"""The demo's trace file read back: one request's spans, and its timeline in words."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any


def read_spans(path: Path) -> list[dict[str, Any]]:
    """Every span the console exporter wrote to ``path`` (one JSON object a line)."""
    if not path.exists():
        return []
    spans = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            spans.append(json.loads(line))
        except ValueError:
            continue  # a line another process is still writing
    return spans


def _trace_of(span: dict[str, Any]) -> str:
    return str(span.get("context", {}).get("trace_id", "")).removeprefix("0x")


def failover_trace(trace_id: str | None, path: Path, wait_s: float) -> list[dict[str, Any]]:
    """The spans of ``trace_id`` in ``path``, once its result span is there (at most ``wait_s``
    for the processes' batches), oldest first."""
    give_up = time.monotonic() + wait_s
    spans: list[dict[str, Any]] = []
    while trace_id:
        spans = [s for s in read_spans(path) if _trace_of(s) == trace_id]
        if any(s["name"] == "aipool.result" for s in spans) or time.monotonic() > give_up:
            break
        time.sleep(0.2)
    return sorted(spans, key=lambda s: s["start_time"])


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def timeline(spans: list[dict[str, Any]]) -> list[str]:
    """``+12.3 ms  4.1 ms  aipool.call  gemini gemini-2.5-flash``: each span of the pool and the
    Celery instrumentation, from the first span's start (Redis and HTTP spans left out)."""
    if not spans:
        return ["no span of the failover was written"]
    start = _at(spans[0]["start_time"])
    lines = []
    for span in spans:
        name = span["name"]
        if not (name.startswith(("aipool.", "run/", "apply_async/"))):
            continue
        attributes = span.get("attributes", {})
        took = (_at(span["end_time"]) - _at(span["start_time"])) * 1000
        about = " ".join(
            str(attributes[key])
            for key in ("aipool.queue", "aipool.provider", "aipool.outcome", "aipool.status")
            if key in attributes
        )
        lines.append(
            f"+{(_at(span['start_time']) - start) * 1000:7.1f} ms {took:7.1f} ms  {name}  {about}"
        )
    return lines
