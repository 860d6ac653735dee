"""Where a provider's breaker lives: two Redis keys, changed only by the Lua scripts.

``aipool:breaker:{provider}:state`` is a hash (state, gen, failures, opened_at, changed_at,
tripped_at: when the current or last outage began, and paused_until while a rate-limited
provider's declared retry delay lasts);
``aipool:breaker:{provider}:trials`` is a sorted set of the half-open trial slots in use, scored by
when each was taken. Every transition runs inside one script, so the whole pool sees one order of
events; reads for dispatch and reports are plain commands that never change anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aipool.breaker.state import BreakerState
from aipool.redis.lua import LuaScripts, text

_SCRIPTS = LuaScripts("aipool.breaker", "acquire", "record", "refusing")


@dataclass(frozen=True)
class Acquired:
    """What ``acquire.lua`` decided."""

    admitted: bool
    state: BreakerState
    generation: int
    retry_at: float | None
    transitioned_from: BreakerState | None
    consecutive_failures: int = 0


@dataclass(frozen=True)
class Outcome:
    """What ``record.lua`` did with a reported outcome."""

    counted: bool
    state: BreakerState
    transitioned_from: BreakerState | None
    consecutive_failures: int
    #: With a transition: when the outage it belongs to began (see ``record.lua``), if known.
    tripped_at: float | None = None


@dataclass(frozen=True)
class StoredState:
    """The breaker's keys as read, without any transition applied."""

    state: BreakerState
    consecutive_failures: int
    opened_at: float | None
    half_open_in_flight: int
    #: Until when the provider asked the pool to leave it alone (a 429's retry delay), if ever.
    paused_until: float | None = None


def _state(value: Any) -> BreakerState | None:
    name = text(value)
    return BreakerState(name) if name else None


def acquired(reply: list[Any]) -> Acquired:
    """Read ``acquire.lua``'s reply."""
    admitted, state, gen, retry_at, moved, *failures = reply
    retry = text(retry_at)
    return Acquired(
        admitted=int(admitted) == 1,
        state=BreakerState(text(state)),
        generation=int(gen),
        retry_at=float(retry) if retry else None,
        transitioned_from=_state(moved),
        consecutive_failures=int(failures[0]) if failures else 0,
    )


def recorded(reply: list[Any]) -> Outcome:
    """Read ``record.lua``'s reply."""
    counted, state, moved, failures, *tripped = reply
    return Outcome(
        counted=int(counted) == 1,
        state=BreakerState(text(state)),
        transitioned_from=_state(moved),
        consecutive_failures=int(failures),
        tripped_at=tripped_time(tripped[0] if tripped else None),
    )


def tripped_time(value: Any) -> float | None:
    """A ``tripped_at`` as a script answered it (``''`` or absent: not known)."""
    raw = text(value) if value is not None else ""
    return float(raw) if raw else None


class BreakerStore:
    """The Redis side of one provider's breaker."""

    def __init__(self, redis_client: Any, provider: str) -> None:
        self.redis = redis_client
        self.state_key = f"aipool:breaker:{provider}:state"
        self.trials_key = f"aipool:breaker:{provider}:trials"
        scripts = _SCRIPTS.for_client(redis_client)
        self._acquire = scripts["acquire"]
        self._record = scripts["record"]

    def acquire_call(
        self, now: float, recovery_timeout: float, max_trials: int, trial_timeout: float, token: str
    ) -> tuple[list[str], list[Any]]:
        """Keys and arguments of ``acquire.lua``, for running it alone or inside another script."""
        keys = [self.state_key, self.trials_key]
        return keys, [repr(now), repr(recovery_timeout), max_trials, repr(trial_timeout), token]

    def run_acquire(self, keys: list[str], args: list[Any]) -> list[Any]:
        return list(self._acquire(keys=keys, args=args))

    def record(
        self, outcome: str, now: float, generation: int, token: str | None, threshold: int
    ) -> Outcome:
        keys = [self.state_key, self.trials_key]
        args = [outcome, repr(now), generation, token or "", threshold]
        return recorded(self._record(keys=keys, args=args))

    def read(self, now: float, trial_timeout: float) -> StoredState:
        """One round trip: the state hash and the live trial slots."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hmget(self.state_key, ["state", "failures", "opened_at", "paused_until"])
        pipe.zcount(self.trials_key, f"({now - trial_timeout!r}", "+inf")
        (state, failures, opened_at, paused_until), in_flight = pipe.execute()
        current = _state(state) if state is not None else None
        current = current or BreakerState.CLOSED
        return StoredState(
            state=current,
            consecutive_failures=int(failures or 0),
            opened_at=float(opened_at) if opened_at is not None else None,
            half_open_in_flight=int(in_flight) if current is BreakerState.HALF_OPEN else 0,
            paused_until=float(paused_until) if paused_until is not None else None,
        )

    def peek_open(self) -> tuple[BreakerState, float | None, float | None]:
        """The stored state, when it last opened and until when the provider is paused, in one
        command."""
        return opened(self.redis.hmget(self.state_key, ["state", "opened_at", "paused_until"]))

    def peek_outage(self) -> tuple[BreakerState, float | None]:
        """The stored state and when its current or last outage began (``tripped_at``), if the
        breaker holds it, in one command."""
        state, tripped_at = self.redis.hmget(self.state_key, ["state", "tripped_at"])
        current = _state(state) if state is not None else None
        return current or BreakerState.CLOSED, tripped_time(tripped_at)

    def peek_open_at(self) -> tuple[BreakerState, float | None, float | None, float]:
        """:meth:`peek_open` and Redis's time (epoch seconds), in one round trip."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.hmget(self.state_key, ["state", "opened_at", "paused_until"])
        pipe.time()
        reply, (seconds, micros) = pipe.execute()
        return (*opened(reply), seconds + micros / 1e6)


def opened(reply: list[Any]) -> tuple[BreakerState, float | None, float | None]:
    """The stored state, when it last opened and until when the provider is paused, from an
    HMGET of state, opened_at and paused_until."""
    state, opened_at, paused_until = reply
    current = _state(state) if state is not None else None
    return (
        current or BreakerState.CLOSED,
        float(opened_at) if opened_at is not None else None,
        float(paused_until) if paused_until is not None else None,
    )
