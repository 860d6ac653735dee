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

from aipool.contract.route import Hop, Route
from aipool.contract.vocabulary import Outcome, outcome_named
from aipool.errors import InvalidJourney
from aipool.lanes import queue_of

__all__ = ["Attempt", "Journey", "Route"]


@dataclass(frozen=True)
class Attempt:
    """One hop's ``outcome`` (:mod:`aipool.contract.vocabulary`); ``error`` is a short
    code-and-reason, never a prompt; ``code``, of a failed call, the provider error's code
    (``timeout``, ``auth_error``...: :mod:`aipool.errors`)."""

    provider: str
    model: str
    outcome: Outcome
    error: str | None = None
    latency_ms: float = 0.0
    code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "outcome": self.outcome,
            "error": self.error,
            "latency_ms": round(self.latency_ms, 2),
            "code": self.code,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Attempt | None:
        """The attempt ``data`` describes, or None when its outcome is not in the vocabulary."""
        outcome = outcome_named(data["outcome"])
        if outcome is None:
            return None
        return cls(
            provider=str(data["provider"]),
            model=str(data["model"]),
            outcome=outcome,
            error=data.get("error"),
            latency_ms=float(data.get("latency_ms", 0.0)),
            code=_code(data.get("code")),
        )


def _code(value: Any) -> str | None:
    # An error code is a short snake_case word; anything else a message carried is dropped.
    if isinstance(value, str) and len(value) <= 40 and value.replace("_", "").isalpha():
        return value if value.islower() else None
    return None


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
            attempts=[
                attempt
                for attempt in map(Attempt.from_dict, data.get("attempts", []))
                if attempt is not None
            ],
            received_at=None if received is None else float(received),
            id=str(data.get("id") or ""),
        )

    @classmethod
    def received(
        cls, data: Any, journey_id: str, route: Route, queue: str | None = None
    ) -> Journey:
        """The journey a message carries, re-anchored on the route this worker computes itself.

        Any producer can write a journey, so nothing in it decides what is called or recorded:
        the route (intent, complexity, reason, chain and its models) is ``route``, the one this
        worker's own table gives the request, so a producer with another table (a rolling change
        of a model name) loses nothing and a forged one gains nothing. What the message keeps is
        which hop it is for, and that hop must be the queue it arrived on (``queue``, when the
        broker says it; either of its lanes, :mod:`aipool.lanes`) and on ``route``'s chain: a message cannot make a worker call a provider
        it does not serve, or one the request's chain never reaches. Attempts it lists survive
        only where they fit that chain (a provider before this hop, the chain's model, an outcome
        the pool records); ``received_at`` only where it is a finite time (the route record in
        Redis is what the deadline counts from). ``journey_id`` is the name the pool gives this
        request (its task id and request digested): a journey naming another is refused, so no
        message reaches another request's attempts. Anything else raises
        :class:`InvalidJourney`, and no call is made.
        """
        try:
            sent = cls.from_dict(data)
            hop = sent.route.chain[sent.position]
            if sent.position < 0:
                raise IndexError(sent.position)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise InvalidJourney("the journey field is malformed") from exc
        if sent.id and sent.id != journey_id:
            raise InvalidJourney("the journey names another request")
        if sent.received_at is not None and not math.isfinite(sent.received_at):
            raise InvalidJourney("the journey's received_at is not a finite time")
        if queue is not None and not hop.terminal and queue_of(queue) != hop.provider:
            raise InvalidJourney(f"a hop for {hop.provider} arrived on the {queue} queue")
        if hop.terminal:
            # The terminal answer is the route's own, whatever the message names.
            position = len(route.chain) - 1
        else:
            try:
                position = route.index(hop.provider)
            except ValueError:
                raise InvalidJourney(f"{hop.provider} is not on this request's chain") from None

        def plausible(attempt: Attempt) -> bool:
            at = route.index_or_none(attempt.provider)
            return at is not None and at < position and attempt.model == route.chain[at].model

        return cls(
            route=route,
            position=position,
            attempts=[a for a in sent.attempts if plausible(a)],
            received_at=sent.received_at,
            id=journey_id,
        )
