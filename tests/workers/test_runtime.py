"""What a worker process hands to the maintenance queue from its hops: the alerts of a missing model
and of a provider's URL not found."""

from __future__ import annotations

from typing import Any

import pytest

from aipool.attempt.event import AttemptEvent
from aipool.contract.journey import Attempt
from aipool.contract.route import Hop, Route
from workers import runtime

HOP = Hop("ollama", "llama3.2:3b")
ROUTE = Route(intent="QUERY", complexity=1, chain=(HOP, Hop("static", "static")), reason="t")


def _event(code: str | None, *, replayed: bool = False, error: str = "") -> AttemptEvent:
    message = error or f"{code}: ollama HTTP 404"
    attempt = Attempt("ollama", HOP.model, "error", message, 1.0, code=code)
    return AttemptEvent("r", "j", 0, HOP, attempt, ROUTE, None, replayed=replayed)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any, Any]]:
    from workers.app import app

    calls: list[tuple[str, Any, Any]] = []
    monkeypatch.setattr(
        app, "send_task", lambda name, args=None, queue=None, **_: calls.append((name, args, queue))
    )
    monkeypatch.setattr(runtime, "_asked", {})
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


def test_a_call_whose_url_was_not_found_asks_maintenance_to_alert_naming_the_host_alone(
    sent: list[tuple[str, Any, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: Ollama's base URL with a login, a gateway's token in its path and a key in its query
    monkeypatch.setenv(
        "OLLAMA_BASE_URL", "http://ops:hunter22@gpu-box:11434/t0k3n-path/v1?key=querykey"
    )
    # When a call meets its 404, the provider's answer quoting the request's prompt
    error = "not_found: ollama HTTP 404: no route for POST /t0k3n-path/v1/api/chat: Why is it slow?"
    runtime.alert_on_url_not_found(_event("not_found", error=error))
    # Then the maintenance queue is asked for the alert with the provider and the URL's host alone
    assert sent == [("aipool.provider_not_found", ["ollama", "gpu-box:11434"], "maintenance")]
    for secret in ("hunter22", "t0k3n", "querykey", "slow"):
        assert secret not in repr(sent)


def test_a_burst_of_urls_not_found_asks_once_apart_from_a_missing_model(
    sent: list[tuple[str, Any, Any]],
) -> None:
    for _ in range(50):
        runtime.alert_on_url_not_found(_event("not_found"))
        runtime.alert_on_missing_model(_event("model_missing"))
    runtime.alert_on_url_not_found(_event("rejected"))
    runtime.alert_on_url_not_found(_event("not_found", replayed=True))
    assert [name for name, _, _ in sent] == ["aipool.provider_not_found", "aipool.model_missing"]


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
    monkeypatch.setattr(runtime, "_asked", {})
    # When a call meets a missing model
    runtime.alert_on_missing_model(_event("model_missing"))
    # Then a warning names the alert it could not send
    assert "aipool.model_missing not sent" in caplog.text
