"""The completion kept beside an answered attempt, as JSON: a later delivery of the same message
gives the same answer from it (``Kept`` in :mod:`aipool.attempt.lifecycle`)."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from aipool.contract.completion import Completion, ToolCall


def completion_to_json(completion: Completion) -> str:
    """The completion as kept beside its answered attempt."""
    return json.dumps(completion.to_dict(), ensure_ascii=False, separators=(",", ":"))


def completion_from_json(data: str) -> Completion:
    """The completion an earlier delivery kept beside its answered attempt."""
    raw: dict[str, Any] = json.loads(data)
    known = {f.name for f in fields(Completion)}
    values = {k: v for k, v in raw.items() if k in known}
    values["tool_calls"] = [
        ToolCall(name=str(c["name"]), arguments=dict(c.get("arguments") or {}), id=c.get("id", ""))
        for c in raw.get("tool_calls") or []
    ]
    values.setdefault("text", "")
    values.setdefault("model", "")
    return Completion(**values)
