"""What a worker process hands to the maintenance queue from its hops: a missing model's alert."""

from __future__ import annotations

from typing import Any

import pytest

from aipool.attempt.event import AttemptEvent
from aipool.chains import Hop
from aipool.contract.journey import Attempt
from aipool.routing.router import Route
from workers import runtime

HOP = Hop("ollama", "llama3.2:3b")
ROUTE = Route(intent="QUERY", complexity=1, chain=(HOP, Hop("static", "static")), reason="t")


def _event(code: str | None, *, replayed: bool = False) -> AttemptEvent:
    attempt = Attempt("ollama", HOP.model, "error", f"{code}: ollama HTTP 404", 1.0, code=code)
    return AttemptEvent("r", "j", 0, HOP, attempt, ROUTE, None, replayed=replayed)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, Any]]:
    from workers.app import app

    calls: list[tuple[str, Any, Any]] = []
    monkeypatch.setattr(
        app, "send_task", lambda name, args=None, queue=None, **_: calls.append((name, args, queue))
    )
    monkeypatch.setattr(runtime, "_missing_asked", {})
    return calls


def test_a_call_that_met_a_missing_model_asks_maintenance_to_alert_naming_it(
    sent: list[tuple[str, Any, Any]],
) -> None:
    runtime.alert_on_missing_model(_event("model_missing"))
    assert sent == [("aipool.model_missing", ["ollama", "llama3.2:3b"], "maintenance")]


def test_a_burst_of_such_calls_asks_once_and_other_failures_never(
    sent: list[tuple[str, Any, Any]],
) -> None:
    for _ in range(50):
        runtime.alert_on_missing_model(_event("model_missing"))
    runtime.alert_on_missing_model(_event("server_error"))
    runtime.alert_on_missing_model(_event("model_missing", replayed=True))
    assert len(sent) == 1
