"""A request's trip along its chain, carried from hop to hop inside the task message.

The journey is JSON (it travels in the ``ai.generate`` kwargs across ``Task.replace``): the pool's
name for the request (``id``, :mod:`aipool.attempt.identity`), the route chosen once, the position
of the hop that should run next, every attempt made so far, and when the pool first saw the request
(Redis's time, the start of its ``deadline_s`` budget; the route record in Redis is what the
deadline is counted from, this copy only stands in when Redis lost that record).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from aipool.chains import PROVIDERS, REFUSE, TERMINALS, Hop, build_chain
from aipool.errors import InvalidJourney
from aipool.routing.router import Route
from aipool.routing.table import RouteTable, load_table

__all__ = ["Attempt", "Journey", "Route"]


@dataclass(frozen=True)
class Attempt:
    """One hop's outcome: ``ok``, ``error``, ``abandoned``, ``circuit_open``, ``quota_exceeded``,
    ``deadline``, ``context_too_long``, ``guard_unavailable``, ``skipped``, ``fallback`` or
    ``refused``; ``error`` is a short code-and-reason, never a prompt."""

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
    received_at: float | None = None
    id: str = ""

    @property
    def hop(self) -> Hop:
        return self.route.chain[self.position]

    def elapsed_s(self, now: float | None = None) -> float:
        """Seconds since the pool first saw the request (0 when that is not known)."""
        if self.received_at is None:
            return 0.0
        return max(0.0, (now if now is not None else time.time()) - self.received_at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "route": self.route.to_dict(),
            "position": self.position,
            "attempts": [a.to_dict() for a in self.attempts],
            "received_at": self.received_at,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Journey:
        received = data.get("received_at")
        return cls(
            route=Route.from_dict(data["route"]),
            position=int(data["position"]),
            attempts=[Attempt.from_dict(a) for a in data.get("attempts", [])],
            received_at=None if received is None else float(received),
            id=str(data.get("id") or ""),
        )

    @classmethod
    def verified(cls, data: Any, journey_id: str, table: RouteTable | None = None) -> Journey:
        """The journey a message carries, if the router (or ``submit()``) could have produced it.

        Any producer can write a journey, so it is trusted only as far as it matches what routing
        builds: the first hop is one a rule (or the default) starts at, the rest of the chain is
        the ADR order that follows it, and the position is on the chain. Anything else would let a
        message pick any model at any price, or jump to the static answer: it raises
        :class:`InvalidJourney`, and no call is made. ``journey_id`` is the name the pool gives
        this request (its task id and request digested): a journey naming another is refused, so
        no message can reach another request's attempts; one naming none (sent before journeys
        were named) takes it.
        """
        try:
            journey = cls.from_dict(data)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise InvalidJourney("the journey field is malformed") from exc
        if journey.id and journey.id != journey_id:
            raise InvalidJourney("the journey names another request")
        journey.id = journey_id
        if journey.received_at is not None and not math.isfinite(journey.received_at):
            raise InvalidJourney("the journey's received_at is not a finite time")
        chain = journey.route.chain
        if not chain or not 0 <= journey.position < len(chain):
            raise InvalidJourney(f"position {journey.position} is not on the route's chain")
        first = chain[0]
        if first.provider not in PROVIDERS or chain[-1].provider not in TERMINALS:
            raise InvalidJourney("the route does not start at a provider and end in a terminal hop")
        expected = build_chain(first, tools=chain[-1].provider == REFUSE)
        if chain != expected or first not in _first_hops(table or load_table()):
            raise InvalidJourney("the route is not one the pool's route table produces")
        return journey


def _first_hops(table: RouteTable) -> set[Hop]:
    """Every hop a route can start at: each rule's first hop and the chains' defaults."""
    starts = {rule.first_hop() for rule in table.rules}
    for tools in (False, True):
        starts.add(build_chain(None, tools=tools)[0])
    return starts
