"""A circuit breaker per provider, shared by every worker process of the pool through Redis."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from aipool.breaker.listeners import Listener, notify
from aipool.breaker.state import BreakerState, BreakerTransition, Permit
from aipool.breaker.storage import BreakerStore, Outcome, acquired
from aipool.errors import CircuitOpen
from aipool.periods import pool_zone
from aipool.settings import settings
from aipool.settings.provider_limits import BreakerSettings, ProviderLimits

#: How long a half-open trial slot stays taken without an outcome before it is presumed dead.
#: Longer than the slowest provider call the pool allows (Nemotron answers within ~45 s), so a live
#: trial is never counted twice; short enough that a crashed holder cannot wedge the breaker.
DEFAULT_TRIAL_TIMEOUT = 120.0


class Breaker:
    """One provider's breaker: CLOSED → OPEN → HALF_OPEN → CLOSED, atomically for the pool.

    - CLOSED admits every call. ``failure_threshold`` consecutive counted failures open it; a
      success resets the count.
    - OPEN refuses every call (``CircuitOpen``) until ``recovery_timeout`` has passed since it opened.
    - The first ``acquire()`` after that moves it to HALF_OPEN, where at most
      ``half_open_max_calls`` trial calls are in flight across the whole pool. The **first trial
      success closes it** (pybreaker's rule, ``success_threshold=1``, with ADR-006's three probes
      allowed at once); **any trial failure reopens it** with a fresh recovery window. Outcomes of
      the other trials of that round are then ignored. A trial slot whose holder never reports
      back is reclaimed after ``trial_timeout`` seconds.

    Every transition happens inside a Lua script that also says whether it happened, so each is
    delivered to ``listeners`` exactly once in the pool, by the process that caused it.
    """

    def __init__(
        self,
        redis_client: Any,
        provider: str,
        settings: BreakerSettings,
        clock: Callable[[], float] = time.time,
        listeners: Iterable[Listener] = (),
        *,
        trial_timeout: float = DEFAULT_TRIAL_TIMEOUT,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.clock = clock
        self.listeners = tuple(listeners)
        self.trial_timeout = trial_timeout
        self._store = BreakerStore(redis_client, provider)
        #: (monotonic time of the read, the stored state, until when the provider is paused)
        #: of :meth:`looks_closed`'s last read.
        self._look: tuple[float, BreakerState, float | None, float] | None = None

    @property
    def client(self) -> Any:
        """The Redis client holding this breaker's state."""
        return self._store.redis

    @property
    def store(self) -> BreakerStore:
        """Where the state lives (its keys, for scripts that compose the breaker's)."""
        return self._store

    def setting_values(self) -> list[float]:
        """recovery_timeout, half_open_max_calls, trial_timeout and failure_threshold, as the
        attempt's script reads them."""
        s = self.settings
        return [
            float(s.recovery_timeout),
            max(1, s.half_open_max_calls),
            float(self.trial_timeout),
            s.failure_threshold,
        ]

    def transitioned(
        self,
        old: BreakerState,
        new: BreakerState,
        failures: int,
        at: float,
        tripped_at: float | None = None,
    ) -> None:
        """Deliver one transition a script caused (and told only its caller) to the listeners."""
        reason = _REASONS.get((old, new), f"{old.value} to {new.value}")
        if new is BreakerState.OPEN and old is BreakerState.CLOSED:
            reason = f"{failures} consecutive failures"
        elif (old, new) == (BreakerState.OPEN, BreakerState.HALF_OPEN):
            reason = "recovery timeout passed"
        self._emit(old, new, at, reason, tripped_at)

    def acquire(self) -> Permit:
        """Admit one call or raise ``CircuitOpen`` saying when the breaker next admits one."""
        keys, args, token = self.acquire_call()
        return self.permit_from(self._store.run_acquire(keys, args), token, float(args[0]))

    def acquire_call(self) -> tuple[list[str], list[Any], str]:
        """Keys, arguments and trial token of one ``acquire.lua`` run (alone, or composed with
        the quota's reservation into one script)."""
        token = uuid.uuid4().hex
        keys, args = self._store.acquire_call(
            self.clock(),
            self.settings.recovery_timeout,
            max(1, self.settings.half_open_max_calls),
            self.trial_timeout,
            token,
        )
        return keys, args, token

    def permit_from(self, reply: list[Any], token: str, now: float) -> Permit:
        """The permit ``acquire.lua`` granted, or ``CircuitOpen``; transitions go to listeners."""
        admission = acquired(reply)
        if admission.transitioned_from is not None:
            self._emit(admission.transitioned_from, admission.state, now, "recovery timeout passed")
        if not admission.admitted:
            raise CircuitOpen(self.refusal(admission.state, admission.retry_at, now))
        # Only a trial holds a slot; the token is that slot's name in Redis.
        trial = admission.state is BreakerState.HALF_OPEN
        clean = admission.state is BreakerState.CLOSED and admission.consecutive_failures == 0
        return Permit(self.provider, admission.generation, token if trial else None, clean)

    def record_success(self, permit: Permit) -> bool:
        """Report a successful call; returns whether it counted (it was of the current episode)."""
        return self._record("success", permit)

    def record_failure(self, permit: Permit) -> bool:
        """Report a failure that counts against the provider; returns whether it counted.

        The caller decides what counts (``ProviderError.counts_against_provider``); anything else
        goes to ``release``.
        """
        return self._record("failure", permit)

    def release(self, permit: Permit) -> None:
        """Hand back a permit whose call proved nothing about the provider (e.g. a 400-class
        rejection, or a quota refusal before the call): frees its trial slot, changes no state.

        A permit issued while CLOSED holds no slot, so it costs no round trip."""
        if permit.trial_token is None:
            return
        self._record("release", permit)

    def is_open(self) -> bool:
        """True only while OPEN and the recovery window has not passed; one read, no slot taken."""
        state, opened_at, _ = self._store.peek_open()
        return self._open_now(state, opened_at)

    def looks_closed(self, fresh_s: float, told: Callable[[float], None] | None = None) -> bool:
        """Whether the stored state was CLOSED, and the provider not paused by its own rate
        limit, at a read at most ``fresh_s`` seconds old (one read per ``fresh_s``, not one per
        call). For a producer choosing where to send a request only: the worker there asks the
        breaker itself before it calls, so a breaker that opened since the read costs the request
        one hop, never a call. Each read also tells ``told`` Redis's time (same round trip): a
        producer that only ever looks still stamps the requests it sends on the pool's clock, and
        a pause is judged on that clock."""
        now = time.monotonic()
        look = self._look
        if look is None or now - look[0] >= fresh_s:
            state, _, paused_until, redis_now = self._store.peek_open_at()
            look = self._look = (now, state, paused_until, redis_now)
            if told is not None:
                told(redis_now)
        _, state, paused_until, redis_then = look
        paused = paused_until is not None and redis_then + (now - look[0]) < paused_until
        return state is BreakerState.CLOSED and not paused

    def _open_now(self, state: BreakerState, opened_at: float | None) -> bool:
        if state is not BreakerState.OPEN or opened_at is None:
            return False
        return self.clock() < opened_at + self.settings.recovery_timeout

    def snapshot(self) -> dict[str, Any]:
        """The stored state, JSON-serialisable.

        Keys: ``state`` ("closed" | "open" | "half_open"), ``consecutive_failures``, ``opened_at``
        and ``retry_at`` (epoch seconds while OPEN, else None), ``half_open_in_flight`` (live trial
        slots while HALF_OPEN, else 0), ``paused_until`` (epoch seconds while the provider's own
        rate limit pauses it, else None). An OPEN breaker whose window has passed reads "open"
        until the next ``acquire()`` moves it.
        """
        now = self.clock()
        stored = self._store.read(now, self.trial_timeout)
        is_open = stored.state is BreakerState.OPEN and stored.opened_at is not None
        return {
            "state": stored.state.value,
            "consecutive_failures": stored.consecutive_failures,
            "opened_at": stored.opened_at if is_open else None,
            "retry_at": (
                stored.opened_at + self.settings.recovery_timeout
                if is_open and stored.opened_at is not None
                else None
            ),
            "half_open_in_flight": stored.half_open_in_flight,
            "paused_until": (
                stored.paused_until
                if stored.paused_until is not None and stored.paused_until > now
                else None
            ),
        }

    def _record(self, outcome: str, permit: Permit) -> bool:
        now = self.clock()
        result = self._store.record(
            outcome, now, permit.generation, permit.trial_token, self.settings.failure_threshold
        )
        return self._after_record(result, now)

    def _after_record(self, result: Outcome, now: float) -> bool:
        if result.transitioned_from is not None:
            reason = _REASONS[(result.transitioned_from, result.state)]
            if (
                result.state is BreakerState.OPEN
                and result.transitioned_from is BreakerState.CLOSED
            ):
                reason = f"{result.consecutive_failures} consecutive failures"
            self._emit(result.transitioned_from, result.state, now, reason, result.tripped_at)
        return result.counted

    def _emit(
        self,
        old: BreakerState,
        new: BreakerState,
        at: float,
        reason: str,
        tripped_at: float | None = None,
    ) -> None:
        notify(self.listeners, BreakerTransition(self.provider, old, new, at, reason, tripped_at))

    def refusal(self, state: BreakerState, retry_at: float | None, now: float) -> str:
        """Why a call was refused, and when the breaker next admits one."""
        if retry_at is None:
            return f"{self.provider} circuit {state.value}"
        # In the pool's zone, as a quota's refusal says when room returns: one result's attempts
        # read in one zone.
        when = datetime.fromtimestamp(retry_at, pool_zone()).isoformat(timespec="seconds")
        wait = max(0.0, retry_at - now)
        if state is BreakerState.HALF_OPEN:
            return (
                f"{self.provider} circuit half-open and all trial slots are taken; a slot frees "
                f"when a trial reports back, at the latest {when} (in {wait:.1f} s)"
            )
        return f"{self.provider} circuit open; retries at {when} (in {wait:.1f} s)"


_REASONS: Mapping[tuple[BreakerState, BreakerState], str] = {
    (BreakerState.CLOSED, BreakerState.OPEN): "consecutive failures",
    (BreakerState.HALF_OPEN, BreakerState.CLOSED): "trial call succeeded",
    (BreakerState.HALF_OPEN, BreakerState.OPEN): "trial call failed",
}


def breakers_for(
    redis_client: Any,
    limits: Mapping[str, ProviderLimits] | None = None,
    listeners: Iterable[Listener] = (),
    *,
    clock: Callable[[], float] = time.time,
) -> dict[str, Breaker]:
    """One ``Breaker`` per provider, from ``limits`` (default: the settings')."""
    chosen = settings().limits if limits is None else limits
    shared = tuple(listeners)
    return {
        provider: Breaker(redis_client, provider, pl.breaker, clock, shared)
        for provider, pl in chosen.items()
    }
