"""What a worker does with a request at one hop, as plain functions (the Celery task stays thin).

The steps around a model call run in order: deadline, guards (breaker, then quota), the call, then
observers (ledger, metrics, log). A hop ends in one of two ways: :class:`Done` (a result for the
producer) or :class:`Forward` (re-dispatch to the next provider's queue, same task id). A hop whose
provider is blocked at dispatch time (open breaker, spent quota, passed deadline) is never enqueued:
it is recorded in the attempts trail and the next hop is considered right away.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from aipool import result
from aipool.admission import Admission, completion_from_json
from aipool.chains import Hop
from aipool.contract import Completion, Request
from aipool.errors import AttemptEnded, DeadlineExceeded, HopSkipped, as_provider_error
from aipool.journey import Attempt, Journey, Route
from aipool.providers import Provider, get_provider
from aipool.scrub import scrub
from aipool.settings import settings

log = logging.getLogger("aipool.hop")


@dataclass(frozen=True)
class Forward:
    """Send the request on to ``queue``; ``journey.position`` names the hop that runs there."""

    queue: str
    journey: Journey


@dataclass(frozen=True)
class Done:
    """The producer's final answer."""

    result: dict[str, Any]


class Guards(Protocol):
    """The breaker and quota of every provider, shared by the pool."""

    def blocked(self, provider: str, tokens: int) -> HopSkipped | None:
        """Dispatch-time peek: why ``provider`` cannot take a call now, or ``None``."""
        ...

    def admit(self, provider: str, request_id: str, attempt: int, tokens: int) -> Admission:
        """Acquire the breaker and reserve quota just before the call; raise :class:`HopSkipped`
        (or :class:`AttemptEnded` when an earlier delivery already made this call)."""
        ...


class NoGuards:
    """Guards that let everything through (embedded use without shared state, and unit tests)."""

    def blocked(self, provider: str, tokens: int) -> HopSkipped | None:
        return None

    def admit(self, provider: str, request_id: str, attempt: int, tokens: int) -> Admission:
        return Admission(provider)


@dataclass(frozen=True)
class AttemptEvent:
    """Everything observers may know about one hop: no prompt text, no key."""

    request_id: str
    position: int
    hop: Hop
    attempt: Attempt
    route: Route
    user_id: str | None
    completion: Completion | None = None
    cost_usd: Decimal = Decimal(0)
    at: float = 0.0


Observer = Callable[[AttemptEvent], None]
Pricing = Callable[[str, str, int, int], Decimal]


def _free(provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    return Decimal(0)


class HopRunner:
    """Runs the hop a journey points at, or finds the next hop that can take the request."""

    def __init__(
        self,
        guards: Guards | None = None,
        observers: Iterable[Observer] = (),
        pricing: Pricing = _free,
        providers: Callable[[str], Provider] = get_provider,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.guards = guards or NoGuards()
        self.observers = list(observers)
        self.pricing = pricing
        self.providers = providers
        self.clock = clock

    # -- entry points ---------------------------------------------------------------------------

    def start(
        self, request: Request, request_id: str, route: Route, *, answer_terminal: bool = True
    ) -> Done | Forward:
        """A new request: pick the first hop of ``route`` that can take it.

        When every provider is blocked the terminal hop (static answer or refusal) is answered here,
        unless ``answer_terminal`` is false (a producer, which has no business answering): then
        the request is forwarded to the ``router`` queue positioned at its terminal hop.
        """
        journey = Journey(route=route, received_at=self.clock())
        step = self._advance(request, request_id, journey, 0)
        if answer_terminal:
            return self._answer_if_terminal(request, request_id, step)
        return step

    def run(self, request: Request, request_id: str, journey: Journey) -> Done | Forward:
        """Run the hop at ``journey.position`` (this worker serves its provider's queue)."""
        position = journey.position
        hop = journey.hop
        if hop.terminal:
            return self._terminal(request, request_id, journey, position)
        tokens = request.estimated_total_tokens()
        try:
            remaining = self._remaining(request, journey)
            call = self.guards.admit(hop.provider, request_id, position, tokens)
        except AttemptEnded as ended:
            if ended.answer:
                # The provider answered an earlier delivery of this message: the same answer,
                # charged once (the ledger keeps one row per attempt).
                return self._answered(
                    request, request_id, journey, position, completion_from_json(ended.answer)
                )
            self._record(request, request_id, journey, position, "error", str(ended))
            return self._next(request, request_id, journey, position + 1)
        except HopSkipped as skip:
            self._record(request, request_id, journey, position, skip.code, str(skip))
            return self._next(request, request_id, journey, position + 1)
        started = time.perf_counter()
        try:
            with call:
                completion = self.providers(hop.provider).complete(
                    request, hop.model, timeout_s=remaining
                )
                call.answered(completion)
        except Exception as exc:
            error = as_provider_error(exc)
            elapsed = (time.perf_counter() - started) * 1000
            self._record(
                request,
                request_id,
                journey,
                position,
                "error",
                scrub(f"{error.code}: {error}"),
                elapsed,
            )
            return self._next(request, request_id, journey, position + 1)
        return self._answered(request, request_id, journey, position, completion)

    def _answered(
        self,
        request: Request,
        request_id: str,
        journey: Journey,
        position: int,
        completion: Completion,
    ) -> Done:
        hop = journey.route.chain[position]
        cost = self.pricing(
            hop.provider, completion.model, completion.input_tokens, completion.output_tokens
        )
        self._record(
            request,
            request_id,
            journey,
            position,
            "ok",
            None,
            completion.latency_ms,
            completion=completion,
            cost=cost,
        )
        return Done(result.answered(request_id, journey, hop.provider, completion, cost))

    # -- steps ----------------------------------------------------------------------------------

    def _remaining(self, request: Request, journey: Journey) -> float | None:
        """Seconds left of the request's latency budget; raise when none is left."""
        if request.deadline_s is None:
            return None
        left = request.deadline_s - journey.elapsed_s(self.clock())
        if left <= 0:
            raise DeadlineExceeded(f"deadline of {request.deadline_s:g}s passed")
        return left

    def _next(
        self, request: Request, request_id: str, journey: Journey, start: int
    ) -> Done | Forward:
        return self._answer_if_terminal(
            request, request_id, self._advance(request, request_id, journey, start)
        )

    def _answer_if_terminal(
        self, request: Request, request_id: str, step: Forward
    ) -> Done | Forward:
        """Answer a terminal hop in place: it needs no model, so it needs no queue hop."""
        if step.journey.hop.terminal:
            return self._terminal(request, request_id, step.journey, step.journey.position)
        return step

    def _advance(self, request: Request, request_id: str, journey: Journey, start: int) -> Forward:
        """Position ``journey`` at the first hop from ``start`` that can take the request now."""
        tokens = request.estimated_total_tokens()
        for position in range(start, len(journey.route.chain)):
            hop = journey.route.chain[position]
            if hop.terminal:
                journey.position = position
                return Forward(queue="router", journey=journey)
            try:
                self._remaining(request, journey)
            except DeadlineExceeded as skip:
                self._record(request, request_id, journey, position, skip.code, str(skip))
                continue
            blocked = self.guards.blocked(hop.provider, tokens)
            if blocked is not None:
                self._record(request, request_id, journey, position, blocked.code, str(blocked))
                continue
            journey.position = position
            return Forward(queue=hop.provider, journey=journey)
        raise ValueError("a chain must end in a terminal hop (static or refuse)")

    def _terminal(self, request: Request, request_id: str, journey: Journey, position: int) -> Done:
        hop = journey.route.chain[position]
        completion = self.providers(hop.provider).complete(request, hop.model)
        outcome = "refused" if hop.provider == "refuse" else "fallback"
        self._record(request, request_id, journey, position, outcome, None)
        return Done(result.terminal(request_id, journey, hop.provider, completion.text))

    def _record(
        self,
        request: Request,
        request_id: str,
        journey: Journey,
        position: int,
        outcome: str,
        error: str | None,
        latency_ms: float = 0.0,
        *,
        completion: Completion | None = None,
        cost: Decimal = Decimal(0),
    ) -> None:
        hop = journey.route.chain[position]
        attempt = Attempt(hop.provider, hop.model, outcome, error, latency_ms)
        journey.attempts.append(attempt)
        log.info(
            "hop request_id=%s position=%d provider=%s model=%s outcome=%s error=%s%s",
            request_id,
            position,
            hop.provider,
            hop.model,
            outcome,
            error,
            f" prompt={request.last_user_text()!r}" if settings().log_prompts else "",
        )
        event = AttemptEvent(
            request_id=request_id,
            position=position,
            hop=hop,
            attempt=attempt,
            route=journey.route,
            user_id=request.user_id,
            completion=completion,
            cost_usd=cost,
            at=self.clock(),
        )
        for observer in self.observers:
            try:
                observer(event)
            except Exception:
                # An observer (ledger, metrics) failing must never fail the answer.
                log.exception("observer %r failed for request_id=%s", observer, request_id)
