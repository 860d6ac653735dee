"""What a worker does with a request at one hop, as plain functions (the Celery task stays thin).

A hop ends in one of three ways: :class:`Done` (a result for the producer), :class:`Forward`
(re-dispatch to a queue, same task id: the next provider's, or this one's again a little later when
another delivery of the same message owns the call) or :class:`Drop` (the attempt was answered
long ago: this delivery writes nothing). Whether a call
may be made, what it is charged and where the request goes next is the attempt's lifecycle
(:mod:`aipool.attempt.lifecycle`); this module makes the call, within a wall-clock bound, and tells
the lifecycle how it ended.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

from redis.exceptions import RedisError

from aipool import lanes
from aipool.attempt import soft_limit, task_ids
from aipool.attempt.bound import within
from aipool.attempt.event import AttemptEvent, Observer
from aipool.attempt.layout import (
    Busy,
    Call,
    Decision,
    Ended,
    Foreign,
    Header,
    Kept,
    Missing,
    Passed,
    Recorded,
)
from aipool.attempt.lifecycle import AttemptBook, new_owner
from aipool.attempt.money import micro
from aipool.attempt.timing import recent_median, record_latency, share
from aipool.backlog import QUEUE_WAIT
from aipool.breaker import BreakerState
from aipool.contract import result
from aipool.contract.completion import Completion, ToolCall
from aipool.contract.journey import Attempt, Journey, Route
from aipool.contract.request import Request
from aipool.contract.vocabulary import Outcome, outcome_named
from aipool.errors import (
    DeadlineCut,
    InvalidJourney,
    ModelRefused,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ReplicasBehind,
    UnusableAnswer,
    as_provider_error,
    task_time_limit,
)
from aipool.observers import usage_row
from aipool.providers import get_provider
from aipool.providers.base import Provider
from aipool.quotes import without_quotes
from aipool.routing.router import routed_priority
from aipool.routing.table import load_table
from aipool.routing.windows import CONTEXT_TOO_LONG, fits, skip_reason
from aipool.scrub import scrub
from aipool.settings import settings

log = logging.getLogger("aipool.hop")
T = TypeVar("T")

#: How long an owner keeps trying to record its call's outcome while Redis does not answer, at
#: most (its lease bounds it too): a Redis stalled for a while must not cost a paid answer.
FINISH_RETRY_S = 30.0
#: What each money rule's skip says (``what`` is the limit that held: aipool.attempt.money).
_MONEY_SKIPS = {
    "budget_exhausted": "{provider}: the pool's cap on paid spend this month is reached",
    "service_budget_exhausted": "{provider}: the request's service has used its {what}",
    "budget_saving": "{provider}: saving the rest of the {what} for higher-priority work",
}
#: How old a producer's look at a breaker may be when it sends a request straight to a free,
#: unlimited provider's queue (:meth:`HopRunner.dispatch`): a breaker that opened within it costs
#: requests sent meanwhile one hop each (its worker passes them over), and a producer reads each
#: breaker at most once per this long instead of routing every request through the pool's script.
LOOK_FRESH_S = 1.0
#: How soon a delivery that found its call owned by another comes back to look again, at most.
BUSY_RECHECK_S = 5.0
#: How long a hop asks ``begin`` (or routing) again while Redis does not answer, counted from its
#: first failure, before it takes the guards as unavailable: a reply lost after the script ran
#: must not leave a reservation for a call never made, and every script asked again by the same
#: delivery returns its first outcome (``attempt.lua``: the same owner's ``begin`` is the same
#: call).
SCRIPT_RETRY_S = 5.0


def asked_again(ask: Callable[[], T], retry_s: float | None = None) -> T:
    """``ask()``, asked again while Redis does not answer, for at most ``retry_s`` (default
    :data:`SCRIPT_RETRY_S`) after the first failure; the last :class:`RedisError` then."""
    give_up: float | None = None
    pause = 0.1
    while True:
        try:
            return ask()
        except RedisError:
            now = time.monotonic()
            if give_up is None:
                give_up = now + (SCRIPT_RETRY_S if retry_s is None else retry_s)
            if now + pause > give_up:
                raise
            log.info("Redis did not answer a script; asking again in %.1f s", pause)
            time.sleep(pause)
            pause = min(1.0, pause * 2)


@dataclass(frozen=True)
class Forward:
    """Send the request on to ``queue``; ``journey.position`` names the hop that runs there,
    ``delay_s`` seconds from now (0: at once)."""

    queue: str
    journey: Journey
    delay_s: float = 0.0


@dataclass(frozen=True)
class Done:
    """The producer's final answer."""

    result: dict[str, Any]


@dataclass(frozen=True)
class Drop:
    """This delivery adds nothing: the attempt was answered long ago (its answer is no longer
    kept). The message is acknowledged and no result is written (the producer's result stays)."""

    reason: str


Pricing = Callable[[str, str, int, int], Decimal]
Timeouts = Callable[[str], float]
#: How long the oldest message of each of some lanes has waited (s): :func:`aipool.backlog.oldest_ages`.
LaneWaits = Callable[[list[str]], Mapping[str, float]]


def _free(provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    return Decimal(0)


def _provider_timeout(provider: str) -> float:
    return float(settings().providers[provider].timeout_s)


@dataclass
class Visit:
    """One hop's view of a request: what it asks, whose it is, where it has been.

    ``skips``: the hops of its chain it can be known now never to fit (a prompt longer than the
    model's context window), by position, with the code they are passed over with.
    """

    request: Request
    request_id: str
    journey: Journey
    pricing: Pricing = field(default=lambda *_: Decimal(0))
    header: Header = field(init=False)
    skips: dict[int, str] = field(init=False)
    #: The hops passed over for their lane's wait: provider → (lane, how long its oldest waited).
    waits: dict[str, tuple[str, float]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        chain = self.journey.route.chain
        table = load_table()  # once for every hop's window and the priority, not once per hop
        self.skips = {
            position: CONTEXT_TOO_LONG
            for position, hop in enumerate(chain)
            if not hop.terminal and not fits(self.request, hop, table)
        }
        estimate = (self.request.estimated_input_tokens(), self.request.max_tokens)
        self.header = Header(
            journey_id=self.journey.id,
            request_id=self.request_id,
            chain=chain,
            deadline_s=self.request.deadline_s,
            tokens=self.request.estimated_total_tokens(),
            received=self.journey.received_at,
            service=self.journey.route.service,
            priority=routed_priority(self.request, table),
            # What a call may cost at each hop: the money rules admit calls by it.
            costs=tuple(
                0 if hop.terminal else micro(self.pricing(hop.provider, hop.model, *estimate))
                for hop in chain
            ),
        )
        #: Whether the request waits in the urgent lanes (:mod:`aipool.lanes`) at every hop.
        self.urgent = lanes.is_urgent(self.request, self.journey.route.intent, self.header.priority)

    def forward(self, queue: str, delay_s: float = 0.0) -> Forward:
        """Send the request on to ``queue``, in its own lane."""
        return Forward(queue=lanes.lane(queue, self.urgent), journey=self.journey, delay_s=delay_s)


class HopRunner:
    """Runs the hop a journey points at, or finds the next hop that can take the request."""

    def __init__(
        self,
        book: AttemptBook,
        observers: Iterable[Observer] = (),
        pricing: Pricing = _free,
        providers: Callable[[str], Provider] = get_provider,
        timeouts: Timeouts = _provider_timeout,
        finish_retry_s: float = FINISH_RETRY_S,
        price_completion: Callable[[str, Completion], Decimal] | None = None,
        lane_waits: LaneWaits | None = None,
    ) -> None:
        self.book = book
        self.observers = list(observers)
        self.pricing = pricing
        self.providers = providers
        self.timeouts = timeouts
        self.finish_retry_s = finish_retry_s
        #: Prices an answer as its provider bills it (cache reads and writes apart); without
        #: it, an answer is priced by its input and output tokens like any estimate.
        self.price_completion = price_completion
        #: Reads the lanes' backlogs; without it, no hop is passed over for its queue's wait.
        self.lane_waits = lane_waits

    def now(self) -> float:
        """The pool's time (Redis's), as this process estimates it."""
        return self.book.clock.now()

    # -- entry points ---------------------------------------------------------------------------

    def start(
        self,
        request: Request,
        request_id: str,
        journey_id: str,
        route: Route,
        *,
        answer_terminal: bool = True,
        seen_at: float | None = None,
    ) -> Done | Forward:
        """A new request: pick the first hop of ``route`` that can take it.

        ``seen_at``: when the pool first saw the request waiting (Redis's time, from the lane's
        stamps), if before now: its deadline counts from then.

        When every provider is passed over the terminal hop (static answer or refusal) is answered
        here, unless ``answer_terminal`` is false (a producer, which has no business answering):
        then the request is forwarded to the ``router`` queue positioned at its terminal hop.
        """
        journey = Journey(id=journey_id, route=route, received_at=seen_at)
        visit = Visit(request, request_id, journey, self.pricing)
        self._pass_over_long_waits(visit, range(len(route.chain)))
        try:
            routed = asked_again(lambda: self.book.route(visit.header, visit.skips))
        except RedisError as exc:
            step = self._unguarded(visit, 0, exc)
        else:
            visit.journey.received_at = routed.received
            step = self._follow(visit, routed.decision, routed.now)
        if answer_terminal:
            return self._answer_if_terminal(visit, step)
        return step

    def dispatch(
        self,
        request: Request,
        request_id: str,
        journey_id: str,
        route: Route,
        *,
        answer_terminal: bool = False,
        seen_at: Callable[[], float | None] | None = None,
    ) -> Done | Forward:
        """The first hop of a new request: where a producer (or the router queue's worker) sends
        it.

        A request without a deadline whose first hop is free and has no quota (the local
        Ollama), and whose breaker there looked closed within the last :data:`LOOK_FRESH_S`, goes
        straight to that provider's queue with no round trip: nothing counts from the moment the
        pool first saw it, no quota or money rule can refuse it there, and the worker there asks
        the breaker itself before it calls (a refusal is recorded and moves the request on, as
        any skip). Any other request is routed by the pool (:meth:`start`, with
        ``answer_terminal``, and ``seen_at()`` when the pool first saw it waiting): its deadline
        counts on Redis's clock, and hops that cannot take it now (breaker, quota, money) are
        passed over here, so nothing is queued for a paid provider that would refuse it.

        A duplicate of a request sent straight (a redelivery, a producer's retry) goes to the
        same provider while its breaker looks closed, and the attempt there is one call whoever
        delivers it. One that arrives after the breaker was seen open is routed by the pool,
        which sends it to that same first hop whenever its attempt exists (``attempt.lua``,
        ``advance``): it gets the answer there, waits for the call in hand, or follows the choice
        made after it, and is never called a second time further down the chain.
        """
        first = route.chain[0]
        # The quota's limits are in memory: a limited first hop (every paid provider) is routed
        # without building a visit here that start() would build again.
        if (
            request.deadline_s is None
            and not first.terminal
            and self.book.quotas[first.provider].limits.unlimited
        ):
            visit = Visit(request, request_id, Journey(id=journey_id, route=route), self.pricing)
            if (
                0 not in visit.skips
                and visit.header.costs[0] == 0
                and self._looks_closed(first.provider)
            ):
                # No route record says when the pool first saw it: the journey does, on this
                # process's estimate of Redis's clock (told at each look), so its latency counts
                # from here. Without a deadline, nothing else reads it.
                visit.journey.received_at = self.now()
                return visit.forward(first.provider)
        return self.start(
            request,
            request_id,
            journey_id,
            route,
            answer_terminal=answer_terminal,
            seen_at=seen_at() if seen_at is not None else None,
        )

    def reused(self, request_id: str, journey_id: str) -> Done | None:
        """The refusal of a request sent under a task id another request holds
        (:mod:`aipool.attempt.task_ids`), or ``None`` when the id is this request's."""
        try:
            mine = task_ids.claim(self.book.client, request_id, journey_id, self.book.answer_keep)
        except RedisError:
            return None  # routing meets the outage and says so
        if mine:
            return None
        log.warning("request_id=%s refused: the task id names another request", request_id)
        return Done(
            result.error(
                request_id,
                "task_id_reused",
                "this task id was used for another request; send this one under a new id",
            )
        )

    def _looks_closed(self, provider: str) -> bool:
        try:
            return self.book.breakers[provider].looks_closed(LOOK_FRESH_S, self.book.clock.told)
        except RedisError:
            return False  # the pool routes it, and meets the outage there

    def run(self, request: Request, request_id: str, journey: Journey) -> Done | Forward | Drop:
        """Run the hop at ``journey.position`` (this worker serves its provider's queue)."""
        visit = Visit(request, request_id, journey, self.pricing)
        position = journey.position
        hop = journey.hop
        if hop.terminal:
            return self._terminal(visit, position)
        # This hop's own wait is over (the message is here); the ones it may fall back to are not.
        self._pass_over_long_waits(visit, range(position + 1, len(journey.route.chain)))
        owner = new_owner()
        bound = self.timeouts(hop.provider)
        try:
            begun = asked_again(
                lambda: self.book.begin(
                    visit.header,
                    position,
                    owner=owner,
                    bound_s=min(bound, self._share(visit, position)),
                    abandoned_row=lambda start: self._abandoned_row(visit, position, start, owner),
                    skips=visit.skips,
                )
            )
        except RedisError as exc:
            return self._answer_if_terminal(visit, self._unguarded(visit, position, exc))
        except ReplicasBehind as behind:
            return self._answer_if_terminal(visit, self._behind(visit, position, behind, owner))
        if isinstance(begun, Call):
            return self._answer_if_terminal(visit, self._call(visit, position, begun, owner, bound))
        if isinstance(begun, Kept):
            if not begun.answer:
                return Drop(f"{hop.provider} answered this attempt long ago")
            # The provider answered an earlier delivery of this message: the same answer, charged
            # once (its ledger row was booked then).
            return self._answered(
                visit, position, completion_from_json(begun.answer), begun.now, replayed=True
            )
        if isinstance(begun, Busy):
            # Another delivery owns the call. If its worker lives, it answers and this message,
            # back a little later, gets that answer; if it died, its lease ends and the message
            # then moves on. Either way nothing is lost and nothing is called twice.
            wait = min(BUSY_RECHECK_S, max(0.5, begun.lease - begun.now + 0.5))
            return visit.forward(hop.provider, delay_s=wait)
        if isinstance(begun, Foreign):
            raise InvalidJourney("the attempt's record belongs to another request")
        return self._answer_if_terminal(visit, self._after(visit, position, begun))

    def _pass_over_long_waits(self, visit: Visit, positions: Iterable[int]) -> None:
        """Pass over (``queue_wait``) the hops whose lane's oldest message has waited at least as
        long as the request's deadline has left: the request would wait there as long, and then
        be too late. Only for a request with a deadline; the lanes' ages unknown, nothing is
        passed over."""
        left_of = visit.request.deadline_s
        if left_of is None or self.lane_waits is None:
            return
        chain = visit.journey.route.chain
        candidates = {
            position: lanes.lane(chain[position].provider, visit.urgent)
            for position in positions
            if not chain[position].terminal and position not in visit.skips
        }
        if not candidates:
            return
        try:
            waits = self.lane_waits(sorted(set(candidates.values())))
            if not self.book.clock.told_yet:
                # A fresh process: no script has told it Redis's time yet, and its host's clock
                # (90 s ahead, say) would make the deadline look spent and pass over every lane
                # with a wait (issue #42). Asked once per process.
                seconds, micros = self.book.client.time()
                self.book.clock.told(float(seconds) + float(micros) / 1_000_000)
        except Exception:  # ages are advice: a Redis that does not answer decides nothing here
            log.debug("lane waits unreadable for request_id=%s", visit.request_id, exc_info=True)
            return
        left = left_of - visit.journey.elapsed_s(self.now())
        for position, lane in candidates.items():
            wait = waits.get(lane, 0.0)
            if wait > 0 and wait >= left:
                visit.skips[position] = QUEUE_WAIT
                visit.waits[chain[position].provider] = (lane, wait)

    def _share(self, visit: Visit, position: int) -> float:
        """How long this hop's call may take of what the deadline leaves, the providers after
        it still to try (:mod:`aipool.attempt.timing`); unbounded without a deadline. ``begin``
        still cuts it at the deadline itself, on Redis's clock."""
        deadline = visit.request.deadline_s
        if deadline is None:
            return float("inf")
        chain = visit.journey.route.chain
        later = [
            hop.provider
            for at, hop in enumerate(chain[position + 1 :], start=position + 1)
            if not hop.terminal and at not in visit.skips
        ]
        left = deadline - visit.journey.elapsed_s(self.now())
        return share(left, later, lambda provider: recent_median(self.book.client, provider))

    # -- the call -------------------------------------------------------------------------------

    def _call(
        self, visit: Visit, position: int, call: Call, owner: str, bound: float
    ) -> Done | Forward:
        hop = visit.journey.route.chain[position]
        provider = self.providers(hop.provider)
        started = time.perf_counter()
        # The route decides how much of max_tokens a model may think (docs/routing.md).
        thinking = visit.journey.route.thinking_budget(visit.request.max_tokens)
        try:
            completion = within(
                call.limit_s,
                lambda: provider.complete(
                    visit.request, hop.model, timeout_s=call.limit_s, thinking_budget=thinking
                ),
                hop.provider,
            )
        except Exception as exc:
            return self._failed(
                visit, position, call, owner, bound, as_provider_error(exc), started
            )
        answered = self._succeeded(visit, position, call, owner, completion)
        # After finish: a sample costs the answer nothing, and holds only a duration.
        record_latency(self.book.client, hop.provider, time.perf_counter() - started)
        return answered

    def _succeeded(
        self, visit: Visit, position: int, call: Call, owner: str, completion: Completion
    ) -> Done | Forward:
        hop = visit.journey.route.chain[position]
        tokens = completion.input_tokens + completion.output_tokens
        event = self._event(
            visit,
            position,
            Attempt(hop.provider, hop.model, "ok", None, completion.latency_ms),
            completion=completion,
            tokens=(completion.input_tokens, completion.output_tokens),
            model=completion.model,
            at=call.now,
            booked=True,
            call_id=owner,
        )
        reply = self._finish(
            visit,
            position,
            call,
            event,
            owner=owner,
            answered=True,
            verdict="success",
            booked=tokens,
            answer=completion_to_json(completion),
        )
        if isinstance(reply, Ended):  # a finish retried after its first try took the answer
            log.info("request_id=%s position=%d recorded already", visit.request_id, position)
        elif isinstance(reply, Missing):
            # Redis lost the call's record (a restart without persistence; another delivery may
            # own a new one): the call was booked all the same, and its answer is still this
            # delivery's to give.
            log.warning(
                "request_id=%s position=%d: %s answered after its record was lost; booked",
                visit.request_id,
                position,
                hop.provider,
            )
        return self._answered(visit, position, completion, call.now, event=event)

    def _failed(
        self,
        visit: Visit,
        position: int,
        call: Call,
        owner: str,
        bound: float,
        error: ProviderError,
        started: float,
    ) -> Done | Forward:
        hop = visit.journey.route.chain[position]
        # A timeout that only the request's deadline made short (the deadline itself, or the
        # share of it the later providers leave this one) says nothing about the provider.
        short = isinstance(error, ProviderTimeout) and call.limit_s < bound - 1e-6
        if short:
            error = DeadlineCut(f"cut at {call.limit_s:.3g} s of the request's deadline")
        verdict = "failure" if error.counts_against_provider and not short else "release"
        pause = rate_limit_pause(error)
        if pause:
            # The provider said when to come back: the pool pauses it for that long instead of
            # counting the 429 against it (only repeated 429s without a delay open its breaker).
            verdict = "release"
        estimated = error.billing_unknown
        # An unusable answer was billed as its usage says: booked like an answer.
        billed = error.billed if isinstance(error, UnusableAnswer) else None
        if billed is not None:
            tokens = (billed.input_tokens, billed.output_tokens)
        elif estimated:
            tokens = (visit.request.estimated_input_tokens(), visit.request.max_tokens)
        else:
            tokens = (0, 0)
        # The provider's text is stored (result, ledger, log): no key, and no quote of the prompt.
        message = without_quotes(
            scrub(f"{error.code}: {error}") or error.code, visit.request.text()
        )
        elapsed = (time.perf_counter() - started) * 1000
        event = self._event(
            visit,
            position,
            Attempt(hop.provider, hop.model, "error", message, elapsed, code=error.code),
            completion=billed,
            tokens=tokens,
            at=call.now,
            booked=True,
            estimated=estimated,
            call_id=owner,
        )
        reply = self._finish(
            visit,
            position,
            call,
            event,
            owner=owner,
            answered=False,
            verdict=verdict,
            booked=sum(tokens),
            answer="",
            code=error.code,
            detail=(message,),
            pause_s=pause,
            ends=isinstance(error, ModelRefused) and visit.journey.route.refusal_ends,
        )
        visit.journey.attempts.append(event.attempt)
        if isinstance(reply, Ended):
            return self._follow(visit, reply.decision, reply.now)
        # The record is gone (Redis restarted empty) or unreachable: the next hop's own
        # admission decides whether it may call.
        return self._follow(visit, Decision(_next_provider(visit, position)), self.now())

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

    # -- after the call, or instead of it -------------------------------------------------------

    def _behind(
        self, visit: Visit, position: int, behind: ReplicasBehind, owner: str
    ) -> Done | Forward:
        """The call was admitted, but no replica holds its record and the pool requires one: it
        is not made. Its record ends as a failure that billed nothing (the permit released, the
        tokens back, the request counted, a $0 ledger row), so a later delivery moves on the
        same way instead of calling (the table's "replicas behind" row)."""
        call = behind.reply
        assert isinstance(call, Call)
        hop = visit.journey.route.chain[position]
        message = f"{hop.provider}: not called: {behind}"
        event = self._event(
            visit,
            position,
            Attempt(hop.provider, hop.model, REPLICAS_BEHIND, message, 0.0),
            at=call.now,
            booked=True,
        )
        reply = self._finish(
            visit,
            position,
            call,
            event,
            owner=owner,
            answered=False,
            verdict="release",
            booked=0,
            answer="",
            code=REPLICAS_BEHIND,
            detail=(message,),
        )
        visit.journey.attempts.append(event.attempt)
        if isinstance(reply, Ended):
            return self._follow(visit, reply.decision, reply.now)
        return self._follow(visit, Decision(_next_provider(visit, position)), self.now())

    def _after(self, visit: Visit, position: int, ended: Ended) -> Done | Forward:
        """An attempt that ended without an answer, now or on an earlier delivery."""
        hop = visit.journey.route.chain[position]
        if ended.state == "skipped":
            provider = visit.journey.route.chain[position].provider
            outcome = outcome_named(ended.code) or "skipped"
            message = self._why(visit, Passed(provider, outcome, ended.detail), ended.now)
            self._record(visit, position, outcome, message, at=ended.now)
        elif ended.code == REPLICAS_BEHIND:
            # No call was made; its $0 row was booked when the first delivery ended it.
            message = ended.detail[0] if ended.detail else REPLICAS_BEHIND
            self._record(
                visit, position, REPLICAS_BEHIND, message, at=ended.now, booked=True, replayed=True
            )
        elif ended.state == "abandoned":
            self._record(
                visit,
                position,
                "abandoned",
                f"{hop.provider}: the call's worker stopped before it ended; billed at its "
                "estimate",
                at=ended.now,
                booked=True,
                replayed=True,
            )
        else:
            message = ended.detail[0] if ended.detail else ended.code
            self._record(
                visit, position, "error", message, at=ended.now, booked=True, replayed=True
            )
        return self._follow(visit, ended.decision, ended.now)

    def _follow(self, visit: Visit, decision: Decision, now: float) -> Forward:
        """Record the hops ``decision`` passed over; position the journey at its next hop."""
        journey = visit.journey
        for passed in decision.passed:
            message = self._why(visit, passed, now)
            self._record(visit, journey.route.index(passed.provider), passed.code, message, at=now)
        journey.position = journey.route.index(decision.next)
        hop = journey.hop
        return visit.forward(lanes.ROUTER if hop.terminal else hop.provider)

    def _unguarded(self, visit: Visit, start: int, exc: Exception) -> Forward:
        """Redis cannot be asked: no call is made unguarded; every provider hop from ``start`` is
        passed over and the request goes to its terminal answer."""
        chain = visit.journey.route.chain
        if visit.journey.received_at is None:  # no route record: the latency counts from here
            visit.journey.received_at = self.now()
        for position in range(start, len(chain) - 1):
            self._record(
                visit,
                position,
                "guard_unavailable",
                f"{chain[position].provider} guards unreachable: {type(exc).__name__}",
                at=self.now(),
            )
        visit.journey.position = len(chain) - 1
        return visit.forward(lanes.ROUTER)

    def _answer_if_terminal(self, visit: Visit, step: Done | Forward) -> Done | Forward:
        """Answer a terminal hop in place: it needs no model, so it needs no queue hop."""
        if isinstance(step, Forward) and step.journey.hop.terminal:
            return self._terminal(visit, step.journey.position)
        return step

    def _answered(
        self,
        visit: Visit,
        position: int,
        completion: Completion,
        at: float,
        *,
        replayed: bool = False,
        event: AttemptEvent | None = None,
    ) -> Done:
        hop = visit.journey.route.chain[position]
        if event is None:
            event = self._event(
                visit,
                position,
                Attempt(hop.provider, hop.model, "ok", None, completion.latency_ms),
                completion=completion,
                tokens=(completion.input_tokens, completion.output_tokens),
                model=completion.model,
                at=at,
                booked=True,
                replayed=replayed,
            )
            self._observe(event, visit)
        visit.journey.attempts.append(event.attempt)
        return Done(
            result.answered(
                visit.request_id,
                visit.journey,
                hop.provider,
                completion,
                event.cost_usd,
                self.now(),
            )
        )

    def _terminal(self, visit: Visit, position: int) -> Done:
        # A request whose deadline left no provider time to answer gets the chain's end too,
        # its attempts saying so (``deadline``): a producer that gave a latency budget wants the
        # best answer inside it, and ADR-006's chain ends in the static answer or the refusal,
        # never in a bare error (issue #42).
        hop = visit.journey.route.chain[position]
        completion = self.providers(hop.provider).complete(visit.request, hop.model)
        outcome: Outcome = "refused" if hop.provider == "refuse" else "fallback"
        self._record(visit, position, outcome, None, at=self.now())
        return Done(
            result.terminal(
                visit.request_id, visit.journey, hop.provider, completion.text, self.now()
            )
        )

    def _why(self, visit: Visit, passed: Passed, now: float) -> str:
        """The message of a hop passed over, from the script's code and details."""
        provider = passed.provider
        detail = passed.detail
        if passed.code == "deadline":
            return f"deadline of {visit.request.deadline_s:g}s passed"
        if passed.code in _MONEY_SKIPS:
            return _MONEY_SKIPS[passed.code].format(provider=provider, what=" ".join(detail))
        if passed.code == QUEUE_WAIT and provider in visit.waits:
            lane, wait = visit.waits[provider]
            return (
                f"{provider}: the oldest request in {lane} has waited {wait:.1f}s, as long as "
                f"the deadline of {visit.request.deadline_s:g}s leaves"
            )
        if passed.code == CONTEXT_TOO_LONG:
            hop = visit.journey.route.chain[visit.journey.route.index(provider)]
            return skip_reason(visit.request, hop) or CONTEXT_TOO_LONG
        if passed.code == "rate_limited" and detail:
            until = float(detail[0])
            when = datetime.fromtimestamp(until, UTC).isoformat(timespec="seconds")
            return (
                f"{provider}: paused until {when} (in {max(0.0, until - now):.1f} s), as its "
                "rate limit asked"
            )
        if passed.code == "circuit_open" and self._guarded(provider):
            state = BreakerState(detail[1]) if len(detail) > 1 else BreakerState.OPEN
            retry_at = float(detail[0]) if detail and detail[0] else None
            return self.book.breakers[provider].refusal(state, retry_at, now)
        if passed.code == "quota_exceeded" and self._guarded(provider) and len(detail) >= 4:
            tokens = visit.header.tokens
            return self.book.quotas[provider].refusal(list(detail), tokens, now)
        return f"{provider}: {passed.code}"

    def _guarded(self, provider: str) -> bool:
        return provider in self.book.breakers and provider in self.book.quotas

    # -- records --------------------------------------------------------------------------------

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


def rate_limit_pause(error: ProviderError) -> float:
    """How long the pool leaves a provider alone after ``error``: the delay a rate-limited
    provider declared, at most ``AIPOOL_RATE_LIMIT_PAUSE_MAX_S``; 0 for any other error."""
    if not isinstance(error, ProviderRateLimited) or not error.retry_after:
        return 0.0
    return min(error.retry_after, settings().rate_limit_pause_max_s)


#: The outcome of a paid call not made because no replica acknowledged its record in time.
REPLICAS_BEHIND: Outcome = "replicas_behind"


def _next_provider(visit: Visit, position: int) -> str:
    chain = visit.journey.route.chain
    later = (hop.provider for hop in chain[position + 1 :] if not hop.terminal)
    return next(later, chain[-1].provider)


def completion_to_json(completion: Completion) -> str:
    """The completion as kept beside its answered attempt."""
    return json.dumps(completion.to_dict(), ensure_ascii=False, separators=(",", ":"))


def completion_from_json(data: str) -> Completion:
    """The completion an earlier delivery kept beside its answered attempt."""
    raw: dict[str, Any] = json.loads(data)
    known = {f.name for f in fields(Completion)}
    values = {k: v for k, v in raw.items() if k in known}
    values["tool_calls"] = [
        ToolCall(name=str(c["name"]), arguments=dict(c.get("arguments") or {}), id=c.get("id", ""))
        for c in raw.get("tool_calls") or []
    ]
    values.setdefault("text", "")
    values.setdefault("model", "")
    return Completion(**values)
