"""A request's trip along its chain, carried from hop to hop inside the task message.

The journey is JSON (it travels in the ``ai.generate`` kwargs across ``Task.replace``): the route
chosen once, the position of the hop that should run next, every attempt made so far, and when the
pool first received the request (the start of its ``deadline_s`` budget).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aipool.chains import Hop
from aipool.routing.router import Route

__all__ = ["Attempt", "Journey", "Route"]


@dataclass(frozen=True)
class Attempt:
    """One hop's outcome: ``ok``, ``error``, ``circuit_open``, ``quota_exceeded``, ``deadline``,
    ``skipped``, ``fallback`` or ``refused``; ``error`` is a short code-and-reason, never a prompt."""

    provider: str
    model: str
    outcome: str
    error: str | None = None
    latency_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "outcome": self.outcome,
            "error": self.error,
            "latency_ms": round(self.latency_ms, 2),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attempt:
        return cls(
            provider=str(data["provider"]),
            model=str(data["model"]),
            outcome=str(data["outcome"]),
            error=data.get("error"),
            latency_ms=float(data.get("latency_ms", 0.0)),
        )


@dataclass
class Journey:
    """Mutable progress of one request along its route."""

    route: Route
    position: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    received_at: float = field(default_factory=time.time)

    @property
    def hop(self) -> Hop:
        return self.route.chain[self.position]

    def elapsed_s(self, now: float | None = None) -> float:
        return (now if now is not None else time.time()) - self.received_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "route": self.route.to_dict(),
            "position": self.position,
            "attempts": [a.to_dict() for a in self.attempts],
            "received_at": self.received_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Journey:
        return cls(
            route=Route.from_dict(data["route"]),
            position=int(data["position"]),
            attempts=[Attempt.from_dict(a) for a in data.get("attempts", [])],
            received_at=float(data["received_at"]),
        )
