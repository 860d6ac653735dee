"""The vocabulary of a breaker: its three states, the permit a call holds, a transition event."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BreakerState(StrEnum):
    """CLOSED lets calls through; OPEN refuses them; HALF_OPEN admits a few trial calls."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True)
class Permit:
    """Proof that the breaker admitted one call; hand it back with exactly one outcome.

    ``generation`` is the breaker episode the call was admitted in: an outcome reported after the
    breaker has moved on (opened, closed, reopened) is ignored, so a late report from an earlier
    episode can never flip the current one. ``trial_token`` names the half-open trial slot held,
    ``None`` for a call admitted while CLOSED. ``clean``: admitted while CLOSED with no failure
    counted, so a success changes nothing and need not be reported (one round trip saved; a
    failure reported meanwhile by another call is then reset by the next unclean success).
    """

    provider: str
    generation: int
    trial_token: str | None = None
    clean: bool = False

    @property
    def trial(self) -> bool:
        """Whether this call is a half-open trial call."""
        return self.trial_token is not None


@dataclass(frozen=True)
class BreakerTransition:
    """One change of a provider's breaker state, reported once for the whole pool."""

    provider: str
    old: BreakerState
    new: BreakerState
    at: float
    reason: str
    #: When the outage this transition belongs to began: the time its CLOSED -> OPEN was stored
    #: at, carried by that opening, its reopenings and its closing alike, so the alert of one
    #: outage is known by it (``aipool.budget``). ``None`` for the half-open step, which no alert
    #: follows, and for a state stored before the breaker kept it.
    tripped_at: float | None = None
