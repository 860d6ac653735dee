"""The demo's stage: it sends requests, shows each answer, and keeps what the story checks.

Every request goes through :func:`tasks.client.submit` (routing in the producer, then the real
worker), and every expectation of the story is a :class:`Check`, printed as it is made; the demo
exits non-zero when one failed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from aipool.children import raise_if_interrupted
from aipool.simulator import Simulator

#: Seconds one request may take end to end in the demo (calls time out after 3 s each).
ANSWER_TIMEOUT_S = 30.0
#: A pause after each answer, so a person can follow the story (and the chart spreads out).
PACE_S = 0.3


@dataclass(frozen=True)
class Sent:
    """A request of the demo and the answer it got; ``at`` is seconds since the demo started."""

    scene: str
    label: str
    at: float
    answer: dict[str, Any]


@dataclass(frozen=True)
class Check:
    scene: str
    what: str
    ok: bool
    detail: str = ""


def trail(answer: dict[str, Any]) -> str:
    """``ollama:error(unreachable) → gemini:ok``: each hop, its outcome and why it failed."""
    parts = []
    for attempt in answer.get("attempts", []):
        text = f"{attempt['provider']}:{attempt['outcome']}"
        if attempt.get("outcome") == "error" and attempt.get("error"):
            text += f"({str(attempt['error']).split(':', 1)[0]})"
        parts.append(text)
    return " → ".join(parts)


@dataclass
class Stage:
    """What every scene works with."""

    console: Console
    sim: Simulator
    redis: Any
    started: float = field(default_factory=time.time)
    sent: list[Sent] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)
    #: The trace of the first request that failed over (the outage scene's first question).
    failover_trace_id: str | None = None

    def now(self) -> float:
        """Seconds since the demo started."""
        return time.time() - self.started

    def mark(self, text: str) -> None:
        """Note an event (a fault switched on, a provider healed) for the chart."""
        self.marks.append((self.now(), text))

    def send(self, scene: str, label: str, request: dict[str, Any]) -> dict[str, Any]:
        """Submit ``request``, wait for the answer, print it on one line, keep it."""
        raise_if_interrupted()
        # deferred: loads celery, kombu, sqlalchemy (~1670 ms of start-up) only when this runs
        from tasks.client import submit

        answer: dict[str, Any] = submit(dict(request, user_id="demo")).get(timeout=ANSWER_TIMEOUT_S)
        self.sent.append(Sent(scene, label, self.now(), answer))
        who = f"{answer.get('provider')} {answer.get('model') or ''}".strip()
        self.console.print(
            f"  {label}: [bold]{answer.get('status')}[/] by {who}  "
            f"[dim]{trail(answer)}  {answer.get('latency_ms', 0):.0f} ms[/]",
            highlight=False,
        )
        time.sleep(PACE_S)
        return answer

    def check(self, scene: str, what: str, ok: bool, detail: str = "") -> bool:
        """Record and print one expectation of the story."""
        raise_if_interrupted()
        self.checks.append(Check(scene, what, ok, detail))
        mark = "[green]✓[/]" if ok else "[bold red]✗[/]"
        suffix = f"  [dim]({detail})[/]" if detail else ""
        self.console.print(f"  {mark} {what}{suffix}", highlight=False)
        return ok

    def breaker(self, provider: str) -> dict[str, Any]:
        """``provider``'s breaker as the pool shares it."""
        # deferred: loads pydantic-settings, redis (~369 ms of start-up) only when this runs
        from aipool.views.health import usage_report

        return dict(usage_report(self.redis)[provider]["breaker"])

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]
