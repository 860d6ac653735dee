"""Hop metrics: which failed calls count against a provider."""

from __future__ import annotations

from decimal import Decimal

import pytest
from prometheus_client import REGISTRY

from aipool.attempt.event import AttemptEvent
from aipool.contract.journey import Attempt, Route
from aipool.contract.route import Hop
from aipool.contract.vocabulary import Outcome
from aipool.metrics import hops
from aipool.metrics.hops import failure_code, observe_attempt


@pytest.mark.parametrize(
    ("outcome", "attempt_code", "code"),
    [
        ("error", "timeout", "timeout"),
        ("error", "unreachable", "unreachable"),
        ("error", "server_error", "server_error"),
        ("error", "rate_limited", "rate_limited"),
        ("error", "bad_response", "bad_response"),
        # a healthy provider refusing one malformed request
        ("error", "rejected", None),
        # hops that never called the provider
        ("deadline", None, None),
        ("circuit_open", None, None),
        ("quota_exceeded", None, None),
        # a redelivered attempt whose call already ended (counted then) carries no code
        ("error", None, None),
        ("ok", None, None),
    ],
)
def test_given_an_attempt_when_classified_then_only_provider_failures_have_a_code(
    outcome: Outcome, attempt_code: str | None, code: str | None
) -> None:
    # The message text no longer matters: a reason that starts like a code is not one.
    attempt = Attempt("ollama", "m", outcome, "timeout: in the text only", 0.0, code=attempt_code)
    assert failure_code(attempt) == code


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _all_failures(provider: str) -> float:
    return sum(
        sample.value
        for family in REGISTRY.collect()
        if family.name == "ai_requests_failed"
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels["provider"] == provider
    )


def test_given_timeouts_and_deadline_skips_when_observed_then_only_timeouts_are_failures() -> None:
    # Given
    route = Route("CHAT", 1, (Hop("ollama", "llama3.2:3b"), Hop("static", "static")), "test")
    timeouts = _sample("ai_requests_failed_total", provider="ollama", code="timeout")
    failures = _all_failures("ollama")
    skips = _sample("aipool_requests_total", provider="ollama", outcome="deadline", service="other")

    def event(outcome: Outcome, error: str, code: str | None = None) -> AttemptEvent:
        attempt = Attempt("ollama", "llama3.2:3b", outcome, error, code=code)
        return AttemptEvent("r", "r", 0, route.chain[0], attempt, route, None)

    # When: two timeouts and five deadline skips
    for _ in range(2):
        observe_attempt(event("error", "timeout: no answer", "timeout"))
    for _ in range(5):
        observe_attempt(event("deadline", "deadline of 0.001s passed"))
    # Then: the skips are hops, not failures
    assert _sample("ai_requests_failed_total", provider="ollama", code="timeout") == (timeouts + 2)
    assert _all_failures("ollama") == failures + 2
    assert (
        _sample("aipool_requests_total", provider="ollama", outcome="deadline", service="other")
        == skips + 5
    )


def _families_of(name: str) -> set[str]:
    return {
        sample.labels["service"]
        for family in REGISTRY.collect()
        if family.name == name
        for sample in family.samples
        if "service" in sample.labels
    }


def test_given_declared_and_made_up_services_when_observed_then_the_label_stays_bounded(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a route table declaring batch only
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[rules]]\nname = "all"\nprovider = "gemini"\n\n[services.batch]\n', encoding="utf-8"
    )
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(routes))
    monkeypatch.setattr(hops, "_declared_cache", (float("-inf"), frozenset()))
    hop = Hop("gemini", "gemini-2.5-flash")
    before = _sample("aipool_cost_usd_total", provider="gemini", service="batch")

    def event(service: str) -> AttemptEvent:
        route = Route("CHAT", 1, (hop,), "test", service=service)
        attempt = Attempt("gemini", hop.model, "ok", None)
        return AttemptEvent(
            "r", "r", 0, hop, attempt, route, None,
            input_tokens=10, output_tokens=5, cost_usd=Decimal("0.25"),
        )  # fmt: skip

    # When batch's call and calls under a hundred invented names are observed
    observe_attempt(event("batch"))
    for i in range(100):
        observe_attempt(event(f"made-up-{i}"))
    # Then batch has its own series, and every invented name is counted as other
    assert _sample("aipool_cost_usd_total", provider="gemini", service="batch") == before + 0.25
    for name in ("aipool_requests", "ai_tokens", "aipool_cost_usd"):
        assert _families_of(name) <= {"batch", "other"}, name
    assert (
        _sample(
            "ai_tokens_total",
            provider="gemini",
            model=hop.model,
            direction="output",
            service="other",
        )
        >= 500
    )
