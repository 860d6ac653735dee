"""Issue #29's incident with real workers: a slow Ollama, a chat backlog, then urgent requests.

Ollama answers in 2 s a call (the simulator's ``slow`` fault), ``chats`` chat requests are sent by
name to the router, and right behind them the three urgent requests of the issue's table, also by
name to ``router`` (what a producer without aipool does). :func:`run_incident` measures how long
each urgent request took to be answered, from the moment it was sent, and then waits for every
chat to be answered too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from celery.result import AsyncResult

from aipool.simulator import Simulator
from tests.support.producer import Producer

#: Ollama's latency during the incident (the issue's 2 s a call).
OLLAMA_SLOW_MS = 2000
#: The issue's urgent requests, and the time each must be answered within (its "Done when").
URGENT: dict[str, dict[str, Any]] = {
    "triage": {
        "prompt": "checkout 5xx 從 1% 升到 30%，payment-service 同時逾時，請分析根因",
        "user_id": "oncall",
    },
    "critical": {
        "prompt": "payment-service is down: what do we roll back first?",
        "priority": "critical",
        "user_id": "oncall",
    },
    "deadline": {"prompt": "什麼是 Kubernetes 的 pod？", "deadline_s": 10, "user_id": "oncall"},
}
TARGET_S = {"triage": 10.0, "critical": 5.0, "deadline": 10.0}


def chat(n: int) -> dict[str, Any]:
    """The ``n``-th routine chat request of the backlog (routed to Ollama)."""
    return {"prompt": f"今天午餐吃什麼好？第 {n} 題", "user_id": f"chat-{n % 7}"}


@dataclass
class Answered:
    """One urgent request: its answer, how long after it was sent it arrived, and how many chats
    of the backlog queued before it were still unanswered then."""

    answer: dict[str, Any]
    seconds: float
    chats_waiting: int = 0


@dataclass
class Incident:
    """What the incident measured."""

    urgent: dict[str, Answered] = field(default_factory=dict)
    chats: list[dict[str, Any]] = field(default_factory=list)

    def table(self) -> str:
        """The issue's table with this run's figures, for a failure message or a report."""
        rows = [
            f"{name}: {a.seconds:.1f} s ({a.chats_waiting} chats still waiting), "
            f"{a.answer.get('status')} by {a.answer.get('provider')}"
            f" ({(a.answer.get('error') or {}).get('code', '')}) after "
            + ", ".join(f"{t['provider']} {t['outcome']}" for t in a.answer.get("attempts") or [])
            for name, a in self.urgent.items()
        ]
        return "; ".join(rows)


def _poll(
    results: dict[str, AsyncResult], sent: float, timeout: float, backlog: list[AsyncResult]
) -> dict[str, Answered]:
    """Each result with the time it arrived and the backlog's chats still waiting then, polled
    together (a ``get`` in turn would make a fast answer wait for a slow one)."""
    answered: dict[str, Answered] = {}
    end = sent + timeout
    while len(answered) < len(results) and time.monotonic() < end:
        for name, result in results.items():
            if name not in answered and result.ready():
                waiting = sum(1 for chat_result in backlog if not chat_result.ready())
                answered[name] = Answered(
                    result.get(timeout=1), time.monotonic() - sent, chats_waiting=waiting
                )
        time.sleep(0.02)
    missing = sorted(set(results) - set(answered))
    if missing:
        raise AssertionError(f"not answered within {timeout:g} s: {', '.join(missing)}")
    return answered


def run_incident(
    producer: Producer, simulator: Simulator, *, chats: int, urgent_timeout_s: float = 30.0
) -> Incident:
    """Queue ``chats`` chat requests behind a slow Ollama, send the urgent ones, measure."""
    # The pool was serving before the incident: every lane's processes have loaded the routing
    # model and built their clients.
    warm = [producer.send(chat(-1)), *(producer.send(r) for r in URGENT.values())]
    for result in warm:
        result.get(timeout=urgent_timeout_s)
    simulator.set_fault("ollama", "slow", ms=OLLAMA_SLOW_MS)
    try:
        backlog = [producer.send(chat(n)) for n in range(chats)]
        sent = time.monotonic()
        urgent = {name: producer.send(request) for name, request in URGENT.items()}
        incident = Incident(urgent=_poll(urgent, sent, urgent_timeout_s, backlog))
        # Every chat is still answered: the backlog drains at Ollama's pace after the incident.
        drain_s = 30.0 + chats * OLLAMA_SLOW_MS / 1000
        incident.chats = [r.get(timeout=drain_s) for r in backlog]
    finally:
        simulator.heal("ollama")
    return incident
