"""What a worker process hands to the maintenance queue from its hops: a missing model's alert."""

from __future__ import annotations

from typing import Any

import pytest

from aipool.attempt.event import AttemptEvent
from aipool.contract.journey import Attempt
from aipool.contract.route import Hop, Route
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


def test_the_pools_app_hands_itself_over_for_alerts_when_it_is_made() -> None:
    # Given the pool's app made (a worker's -A workers.app)
    from workers.app import app

    # Then this process's alerts go through it, with no import of workers.app from here
    assert runtime._maintenance_app is app


def test_a_process_without_the_pools_app_says_the_alert_was_not_sent(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Given a process that runs hops without the pool's app (a one-process benchmark)
    monkeypatch.setattr(runtime, "_maintenance_app", None)
    monkeypatch.setattr(runtime, "_missing_asked", {})
    # When a call meets a missing model
    runtime.alert_on_missing_model(_event("model_missing"))
    # Then a warning names the alert it could not send
    assert "aipool.model_missing not sent" in caplog.text
