"""The response cache in front of the hop runner: where a new request is first decided, and
where its answer is made.

========================  =====================================================================
a new request             what happens
========================  =====================================================================
not cacheable             the hop runner dispatches it, as without a cache (:mod:`.policy`)
entry kept                answered here: ``cached: true``, $0, the saving booked in the ledger
another request fetching  :class:`Recheck`: sent again by name to the router a little later
  the same answer         (its deadline allowing), to find the answer kept by then
nobody fetching it        it leads: dispatched as usual; its answer is kept where it is made
========================  =====================================================================

Followers look again after half of how long the lead has held (at least 50 ms, at most 2 s,
never past the lead's end or their deadline), so a burst of identical requests costs one call
and a few cheap looks each, and a follower's answer comes at most one interval after the
leader's. A lead ends with the leader's answer (kept, or released when the answer was nothing to
keep: a static answer, an error), or after ``AIPOOL_CACHE_WAIT_S`` (a leader that died): then
the next follower leads.

Where the answer is made (:meth:`CacheFront.run`), the key is computed again from the request the
provider answered, never read from a message: no producer can file an answer under another
request's key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aipool import lanes, tracing
from aipool.attempt.event import AttemptEvent
from aipool.attempt.runner import HopRunner
from aipool.attempt.visit import Done, Drop, Forward
from aipool.cache.policy import Cacheable, cacheable
from aipool.cache.store import Entry, Hit, ResponseStore, Wait
from aipool.contract import result
from aipool.contract.completion import Completion
from aipool.contract.journey import Attempt, Journey
from aipool.contract.request import Request
from aipool.contract.route import Hop, Route
from aipool.metrics.cache import observe_lookup
from aipool.routing.router import routed_priority

log = logging.getLogger("aipool.cache")

#: How soon a follower looks again, at least and at most (s).
RECHECK_MIN_S = 0.05
RECHECK_MAX_S = 2.0


@dataclass(frozen=True)
class Recheck:
    """Send the request again by name to ``queue`` (a router lane) in ``delay_s``: an identical
    request is fetching its answer."""

    queue: str
    delay_s: float


class CacheFront:
    """The hop runner with the response cache in front: :meth:`dispatch` for a new request,
    :meth:`run` for a hop."""

    def __init__(self, runner: HopRunner, store: Callable[[], ResponseStore]) -> None:
        self.runner = runner
        self._store = store

    def dispatch(
        self,
        request: Request,
        request_id: str,
        journey_id: str,
        route: Route,
        *,
        answer_terminal: bool = False,
        seen_at: Callable[[], float | None] | None = None,
        claim: bool = True,
        expired: bool = False,
    ) -> Done | Forward | Recheck:
        """:meth:`HopRunner.dispatch`, unless the cache answers ``request`` or an identical
        request is fetching its answer (see the module docstring). When the pool traces, this is
        the ``aipool.route`` span: the decision, and what the cache found.

        ``claim``: whether the task id is claimed here first (:meth:`HopRunner.reused`); a
        producer that minted the id itself claims it once its message is sent
        (:func:`tasks.client.send`). ``expired``: the message's expiry passed (no provider is
        called; an answer the cache holds is still given)."""
        decided = {
            "aipool.intent": route.intent,
            "aipool.complexity": route.complexity,
            "aipool.tier": route.tier,
            "aipool.rule": route.rule,
            "aipool.service": route.service,
            "aipool.provider": route.first.provider,
            "aipool.model": route.first.model,
        }
        with tracing.span("aipool.route", decided) as made:
            # Before the cache: a request refused its task id must not be answered under it.
            refused = self.runner.reused(request_id, journey_id) if claim else None
            if refused is not None:
                return refused
            step = self._dispatch(
                request,
                request_id,
                journey_id,
                route,
                answer_terminal=answer_terminal,
                seen_at=seen_at,
                expired=expired,
            )
            if made is not None:
                made.set_attribute("aipool.step", type(step).__name__.lower())
            return step

    def _dispatch(
        self,
        request: Request,
        request_id: str,
        journey_id: str,
        route: Route,
        *,
        answer_terminal: bool,
        seen_at: Callable[[], float | None] | None,
        expired: bool,
    ) -> Done | Forward | Recheck:
        admitted = cacheable(request, route)
        if admitted is None:
            return self.runner.dispatch(
                request,
                request_id,
                journey_id,
                route,
                answer_terminal=answer_terminal,
                seen_at=seen_at,
                expired=expired,
            )
        seen = seen_at() if seen_at is not None else None
        looked = self._store().lookup(admitted.key, journey_id)
        found = type(looked).__name__.lower()
        observe_lookup(found, route.service)
        tracing.note("aipool.cache", found)
        if isinstance(looked, Hit):
            return self._hit(request, request_id, journey_id, route, looked.entry, seen)
        if isinstance(looked, Wait) and not expired:
            delay = self._recheck_in(request, looked, seen)
            if delay is not None:
                urgent = lanes.is_urgent(request, route.intent, routed_priority(request))
                return Recheck(lanes.lane(lanes.ROUTER, urgent), delay)
        step = self.runner.dispatch(
            request,
            request_id,
            journey_id,
            route,
            answer_terminal=answer_terminal,
            seen_at=lambda: seen,
            expired=expired,
        )
        if isinstance(step, Done):  # every provider passed over: nothing to keep
            self._settle(admitted, journey_id, step.result)
        return step

    def run(
        self,
        request: Request,
        request_id: str,
        journey: Journey,
        *,
        expires_at: float | None = None,
    ) -> Done | Forward | Drop:
        """:meth:`HopRunner.run`; an answer it gives is kept when the request is cacheable."""
        step = self.runner.run(request, request_id, journey, expires_at=expires_at)
        if isinstance(step, Done):
            admitted = cacheable(request, journey.route)
            if admitted is not None:
                self._settle(admitted, journey.id, step.result)
        return step

    def _settle(self, admitted: Cacheable, journey_id: str, answer: dict[str, Any]) -> None:
        entry = Entry.of_result(answer)
        if entry is None:
            self._store().release(admitted.key, journey_id)
        else:
            self._store().keep(admitted.key, entry, admitted.ttl_s, journey_id)

    def _recheck_in(self, request: Request, wait: Wait, seen: float | None) -> float | None:
        """How soon a follower looks again; None when its deadline leaves no time to wait."""
        delay = min(max(wait.held_s / 2, RECHECK_MIN_S), RECHECK_MAX_S, wait.left_s + 0.01)
        if request.deadline_s is not None:
            waited = self.runner.now() - seen if seen is not None else 0.0
            left = request.deadline_s - waited
            if left <= delay:
                return None
        return delay

    def _hit(
        self,
        request: Request,
        request_id: str,
        journey_id: str,
        route: Route,
        entry: Entry,
        seen: float | None,
    ) -> Done:
        now = self.runner.now()
        journey = Journey(id=journey_id, route=route, received_at=seen if seen else now)
        elapsed_ms = journey.elapsed_s(now) * 1000
        hop = Hop(entry.provider, entry.model)
        attempt = Attempt(entry.provider, entry.model, "cached", None, elapsed_ms)
        journey.attempts.append(attempt)
        event = AttemptEvent(
            request_id=request_id,
            journey_id=journey_id,
            position=0,
            hop=hop,
            attempt=attempt,
            route=route,
            user_id=request.user_id,
            at=now,
            saved_usd=entry.cost_usd,
        )
        for observer in self.runner.observers:
            try:
                observer(event)
            except Exception:
                # An observer (ledger, metrics) failing must never fail the answer.
                log.exception("observer %r failed for request_id=%s", observer, request_id)
        completion = Completion(
            text=entry.text,
            model=entry.model,
            finish_reason=entry.finish_reason,
        )
        return Done(
            result.answered(
                request_id,
                journey,
                entry.provider,
                completion,
                Decimal(0),
                now,
                saved_usd=entry.cost_usd,
            )
        )
