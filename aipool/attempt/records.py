"""What a hop writes down: each attempt's event for the observers (ledger, metrics, log), the row
booked if a call is abandoned, and the call's outcome recorded in the attempt (``finish``), tried
again while Redis does not answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from redis.exceptions import RedisError

from aipool.attempt import soft_limit
from aipool.attempt.clock import due_in
from aipool.attempt.event import AttemptEvent, Observer
from aipool.attempt.layout import Call, Ended, Foreign, Missing, Recorded
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.money import micro
from aipool.attempt.visit import Pricing, Visit
from aipool.contract.completion import Completion
from aipool.contract.journey import Attempt
from aipool.contract.vocabulary import Outcome
from aipool.errors import task_time_limit
from aipool.observers import usage_row

log = logging.getLogger("aipool.hop")

#: How long an owner keeps trying to record its call's outcome while Redis does not answer, at
#: most (its lease bounds it too): a Redis stalled for a while must not cost a paid answer.
FINISH_RETRY_S = 30.0


class HopRecords:
    """The records of a hop's attempts.

    The hop runner's parts are layers of one class, each on the one below (records, forwarding
    in :mod:`aipool.attempt.forwarding`, the call in :mod:`aipool.attempt.call`,
    :class:`~aipool.attempt.runner.HopRunner`), so that its settings stay one attribute each, set
    by the runner: the workers, the tracing and the benchmarks change them on a runner in place.
    """

    book: AttemptBook
    observers: list[Observer]
    pricing: Pricing
    #: Prices an answer as its provider bills it (cache reads and writes apart); without it, an
    #: answer is priced by its input and output tokens like any estimate.
    price_completion: Callable[[str, Completion], Decimal] | None
    finish_retry_s: float

    def now(self) -> float:
        """The pool's time (Redis's), as this process estimates it."""
        return self.book.clock.now()

    def eta(self, delay_s: float) -> datetime:
        """The ETA of a message sent now to be taken ``delay_s`` seconds later, on the pool's
        clock (:func:`~aipool.attempt.clock.due_in`): what a delayed step's message carries."""
        return due_in(delay_s, self.book.clock, self.book.client)

    def _finish(
        self,
        visit: Visit,
        position: int,
        call: Call,
        event: AttemptEvent,
        **outcome: Any,
    ) -> Recorded | Ended | Missing | Foreign | None:
        """Record the call's outcome, trying again while Redis does not answer (at most until the
        lease ends); the event goes to the observers either way. ``None``: never recorded (the
        ledger row went to the ledger's fallback)."""
        row = usage_row(event)
        give_up = time.monotonic() + min(self.finish_retry_s, max(0.0, call.lease - self.now() - 1))
        pause = 0.1
        reply: Recorded | Ended | Missing | Foreign | None = None
        while True:
            try:
                reply = self.book.finish(
                    visit.header,
                    position,
                    call,
                    ledger_row=row.to_json(),
                    cost=micro(event.cost_usd),
                    skips=visit.skips,
                    **outcome,
                )
                break
            except RedisError:
                if time.monotonic() + pause > give_up:
                    log.warning(
                        "outcome of %s call not recorded in Redis (request_id=%s); the ledger "
                        "keeps it",
                        event.hop.provider,
                        visit.request_id,
                        exc_info=True,
                    )
                    event = replace(event, booked=False)
                    break
                _pause(pause, visit.request_id)
                pause = min(1.0, pause * 2)
            except BaseException as exc:
                if task_time_limit(exc) is None:
                    raise
                # The soft limit fired while a stalled Redis held the outcome: recording the
                # call (a paid answer, maybe) is how the hop ends well, so it goes on, within the
                # lease as before; the limit fires once, and the hard limit stays the backstop.
                _soft_limit_passed(visit.request_id)
        # The outcome is decided: from here on a soft limit delivered late must not cut the hop
        # (aipool/attempt/soft_limit.py).
        soft_limit.hold()
        self._observe(event, visit)
        return reply

    def _record(
        self,
        visit: Visit,
        position: int,
        outcome: Outcome,
        error: str | None,
        *,
        at: float,
        booked: bool = False,
        replayed: bool = False,
    ) -> None:
        hop = visit.journey.route.chain[position]
        attempt = Attempt(hop.provider, hop.model, outcome, error, 0.0)
        visit.journey.attempts.append(attempt)
        event = self._event(visit, position, attempt, at=at, booked=booked, replayed=replayed)
        self._observe(event, visit)

    def _answer_event(
        self,
        visit: Visit,
        position: int,
        completion: Completion,
        at: float,
        *,
        replayed: bool = False,
        call_id: str = "",
    ) -> AttemptEvent:
        """The event of a hop answered by its model: this delivery's call, or an answer recorded
        by another delivery and replayed."""
        hop = visit.journey.route.chain[position]
        return self._event(
            visit,
            position,
            Attempt(hop.provider, hop.model, "ok", None, completion.latency_ms),
            completion=completion,
            tokens=(completion.input_tokens, completion.output_tokens),
            model=completion.model,
            at=at,
            booked=True,
            replayed=replayed,
            call_id=call_id,
        )

    def _event(
        self,
        visit: Visit,
        position: int,
        attempt: Attempt,
        *,
        at: float,
        completion: Completion | None = None,
        tokens: tuple[int, int] = (0, 0),
        model: str | None = None,
        booked: bool = False,
        replayed: bool = False,
        estimated: bool = False,
        call_id: str = "",
    ) -> AttemptEvent:
        hop = visit.journey.route.chain[position]
        if completion is not None and self.price_completion is not None:
            cost = self.price_completion(hop.provider, completion)
        elif any(tokens):
            cost = self.pricing(hop.provider, model or hop.model, tokens[0], tokens[1])
        else:
            cost = Decimal(0)
        return AttemptEvent(
            request_id=visit.request_id,
            journey_id=visit.journey.id,
            position=position,
            hop=hop,
            attempt=attempt,
            route=visit.journey.route,
            user_id=visit.request.user_id,
            completion=completion,
            input_tokens=tokens[0],
            output_tokens=tokens[1],
            cost_usd=cost,
            at=at,
            booked=booked,
            replayed=replayed,
            estimated=estimated,
            call_id=call_id,
        )

    def _abandoned_row(self, visit: Visit, position: int, start: float, owner: str) -> str:
        """The ledger row booked if ``owner``'s call at ``position`` is abandoned: its
        estimate."""
        hop = visit.journey.route.chain[position]
        event = self._event(
            visit,
            position,
            Attempt(hop.provider, hop.model, "abandoned", "the call's worker stopped", 0.0),
            tokens=(visit.request.estimated_input_tokens(), visit.request.max_tokens),
            at=start,
            booked=True,
            estimated=True,
            call_id=owner,
        )
        return usage_row(event).to_json()

    def _observe(self, event: AttemptEvent, visit: Visit) -> None:
        log.info(
            "hop request_id=%s position=%d provider=%s model=%s outcome=%s error=%s",
            event.request_id,
            event.position,
            event.hop.provider,
            event.hop.model,
            event.attempt.outcome,
            event.attempt.error,
        )
        for observer in self.observers:
            try:
                observer(event)
            except Exception:
                # An observer (ledger, metrics) failing must never fail the answer.
                log.exception("observer %r failed for request_id=%s", observer, event.request_id)


def _soft_limit_passed(request_id: str) -> None:
    log.warning(
        "soft time limit passed for request_id=%s while its call's outcome was being recorded; "
        "still recording it",
        request_id,
    )


def _pause(seconds: float, request_id: str) -> None:
    """Sleep between tries of ``finish``; the soft limit firing meanwhile ends only the sleep."""
    try:
        time.sleep(seconds)
    except BaseException as exc:
        if task_time_limit(exc) is None:
            raise
        _soft_limit_passed(request_id)
