"""ADR-006's story, scene by scene: each scene sends requests, switches simulator faults and
checks that the pool behaved as the ADR says.

Scenes run in order and share the pool's state on purpose: Ollama's breaker opens in the outage
and closes again, Gemini's per-minute quota fills up with the traffic the outage moved to it, and
the budget alert sees the money every scene spent.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aipool.demo.stage import Stage

SIMPLE_ZH = {"prompt": "什麼是 Kubernetes 的 pod？"}
SIMPLE_EN = {"prompt": "What is a Kubernetes pod?"}
CODE_REVIEW = {
    "prompt": "Please review this change:\n```python\ndef retry(n):\n    while n:\n        n -= 1\n```"
}
TRIAGE_ZH = {
    "prompt": (
        "三個告警同時觸發：payment-api 的 KubePodCrashLooping、checkout 的 HighLatency、"
        "orders-db 的 PostgresReplicationLag。請先關聯它們，找出根本原因，再為每個服務提出修復計畫。"
    )
}
CRITICAL_EN = {
    "prompt": "The checkout API returns 502 for every customer. What do we check first?",
    "priority": "critical",
}
TOOL = {
    "name": "restart_deployment",
    "description": "Restart a Kubernetes deployment",
    "parameters": {
        "type": "object",
        "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
        "required": ["namespace", "name"],
    },
}
TOOL_CALL = {"prompt": "Restart the api deployment in the prod namespace", "tools": [TOOL]}
#: Enough Gemini-first requests to fill its 10 requests per minute, whatever the outage sent it.
QUOTA_ATTEMPTS = 12


def _triage(i: int) -> dict[str, Any]:
    return {
        "prompt": (
            f"Three alerts fired at once (incident {i}): KubePodCrashLooping on payment-api, "
            "HighLatency on checkout and PostgresReplicationLag on orders-db. First correlate "
            "them, then find the root cause, then propose a remediation plan for each service."
        )
    }


def _first(answer: dict[str, Any]) -> dict[str, Any]:
    attempts = answer.get("attempts") or [{}]
    return dict(attempts[0])


def _attempt(answer: dict[str, Any], provider: str) -> dict[str, Any] | None:
    return next((a for a in answer.get("attempts", []) if a.get("provider") == provider), None)


def routing(stage: Stage) -> None:
    """Routing by intent and complexity, in zh-TW and English."""
    scene = "routing"
    for label, request, provider in (
        ("zh-TW simple question", SIMPLE_ZH, "ollama"),
        ("English code review", CODE_REVIEW, "ollama"),
        ("zh-TW multi-service alert triage", TRIAGE_ZH, "gemini"),
        ("English, priority critical", CRITICAL_EN, "claude"),
    ):
        answer = stage.send(scene, label, request)
        route = answer.get("route", {})
        stage.check(
            scene,
            f"{label} → {provider}",
            answer.get("status") == "ok" and answer.get("provider") == provider,
            f"intent {route.get('intent')}, complexity {route.get('complexity')}, "
            f"model {answer.get('model')}",
        )


def outage(stage: Stage) -> None:
    """Ollama goes down: its breaker opens after 3 failures, Gemini serves, Ollama comes back."""
    scene = "ollama outage"
    stage.sim.set_fault("ollama", "down")
    stage.mark("Ollama down")
    for i in range(1, 4):
        answer = stage.send(scene, f"question {i} while Ollama is down", SIMPLE_EN)
        if i == 1:
            stage.failover_trace_id = answer.get("trace_id")
        first = _first(answer)
        stage.check(
            scene,
            f"failure {i} counted against Ollama, Gemini answered",
            first.get("provider") == "ollama"
            and first.get("outcome") == "error"
            and answer.get("provider") == "gemini",
        )
    breaker = stage.breaker("ollama")
    stage.check(scene, "Ollama's breaker is open after 3 failures", breaker["state"] == "open")
    answer = stage.send(scene, "question 4, breaker open", SIMPLE_EN)
    stage.check(
        scene,
        "Ollama skipped without a call (breaker open), Gemini answered",
        _first(answer).get("outcome") == "circuit_open" and answer.get("provider") == "gemini",
    )
    stage.sim.heal("ollama")
    stage.mark("Ollama back")
    retry_at = breaker.get("retry_at") or time.time()
    wait = max(0.0, float(retry_at) - time.time()) + 0.2
    stage.console.print(
        f"  Ollama is back; its breaker probes again in {wait:.1f} s", highlight=False
    )
    time.sleep(wait)
    answer = stage.send(scene, "question 5, trial call", SIMPLE_EN)
    stage.check(scene, "the trial call went to Ollama", answer.get("provider") == "ollama")
    stage.check(
        scene, "Ollama's breaker closed again", stage.breaker("ollama")["state"] == "closed"
    )


#: A question Gemini answers first (QUERY, complexity 4: the complexity_high rule, which the
#: demo's route table keeps answers of for the faq service).
FAQ = {
    "prompt": (
        "What are the trade-offs between running PostgreSQL on Kubernetes with StatefulSets and "
        "using a managed database, considering failover, backups, storage performance and "
        "upgrade strategy across three regions?"
    ),
    "service": "faq",
}


def cache(stage: Stage) -> None:
    """The same question twice from a service with the response cache on: one call, one hit."""
    scene = "response cache"
    first = stage.send(scene, "a question from the FAQ service", FAQ)
    again = stage.send(scene, "the same question again", FAQ)
    stage.check(
        scene,
        "a provider answered it the first time, at a cost",
        first.get("status") == "ok" and not first.get("cached") and first.get("cost_usd", 0) > 0,
        f"{first.get('provider')}, ${first.get('cost_usd', 0):.6f}",
    )
    stage.check(
        scene,
        "the second came from the cache: no provider asked, $0, saving what the first cost",
        bool(again.get("cached"))
        and again.get("cost_usd") == 0
        and again.get("saved_usd") == first.get("cost_usd")
        and again.get("content") == first.get("content"),
        f"saved ${again.get('saved_usd', 0):.6f}, {again.get('latency_ms', 0):.0f} ms",
    )


def quota(stage: Stage) -> None:
    """Gemini's per-minute quota runs out and Claude takes over."""
    scene = "gemini quota"
    for i in range(1, QUOTA_ATTEMPTS + 1):
        answer = stage.send(scene, f"triage {i} (Gemini first)", _triage(i))
        gemini = _attempt(answer, "gemini")
        if gemini and gemini.get("outcome") == "quota_exceeded":
            stage.check(
                scene,
                "Gemini skipped (quota spent), Claude answered",
                answer.get("provider") == "claude",
                str(gemini.get("error") or "").split(";")[0],
            )
            return
    stage.check(scene, f"Gemini's quota ran out within {QUOTA_ATTEMPTS} requests", False)


def tools(stage: Stage) -> None:
    """A tool call on Nemotron; then every tool provider down: a refusal, nothing executed."""
    scene = "tools"
    answer = stage.send(scene, "tool call", TOOL_CALL)
    stage.check(
        scene,
        "Nemotron answered with a tool call",
        answer.get("provider") == "nemotron" and bool(answer.get("tool_calls")),
        ", ".join(c.get("name", "?") for c in answer.get("tool_calls") or []),
    )
    for provider in ("nemotron", "gemini", "claude"):
        stage.sim.set_fault(provider, "down")
    stage.mark("tool providers down")
    answer = stage.send(scene, "tool call, every tool provider down", TOOL_CALL)
    stage.check(scene, "the request was refused", answer.get("status") == "refused")
    stage.sim.reset()


def static(stage: Stage) -> None:
    """Every general provider down: the static answer."""
    scene = "static answer"
    for provider in ("ollama", "gemini", "claude"):
        stage.sim.set_fault(provider, "down")
    stage.mark("general providers down")
    answer = stage.send(scene, "question, every provider down", SIMPLE_ZH)
    stage.check(
        scene,
        "the static answer was given",
        answer.get("status") == "fallback" and answer.get("provider") == "static",
    )
    stage.sim.reset()


def budget(stage: Stage) -> None:
    """Beat's budget check, run twice: the monthly budget alert fires once."""
    # deferred: loads sqlalchemy, alembic, pydantic-settings (~1422 ms of start-up) only when this runs
    from aipool.budget import run_budget_checks
    from aipool.budget.checks import default_engine
    from aipool.ledger.usage_log import drain

    scene = "budget alert"
    engine = default_engine()
    drain(stage.redis, engine)
    first = [s for s in run_budget_checks(engine) if s.rule == "monthly_cost"]
    for sent in first:
        stage.console.print(f"  alert: {sent.summary}", highlight=False)
    second = [s for s in run_budget_checks(engine) if s.rule == "monthly_cost"]
    stage.check(
        scene,
        "the monthly budget alert fired on the first check",
        [s.state for s in first] == ["firing"],
    )
    stage.check(scene, "the second check sent nothing more", not second)


SCENES: tuple[tuple[str, Callable[[Stage], None]], ...] = (
    ("Routing by intent and complexity", routing),
    ("A repeated question from the cache", cache),
    ("Ollama goes down and comes back", outage),
    ("Gemini's quota runs out", quota),
    ("Tool calls", tools),
    ("The static answer", static),
    ("The budget alert", budget),
)
