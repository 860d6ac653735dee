"""What a worker does with a request at one hop, as plain functions (the Celery task stays thin).

A hop ends in one of three ways (:mod:`aipool.attempt.visit`): :class:`Done` (a result for the
producer), :class:`Forward` (re-dispatch to a queue, same task id) or :class:`Drop` (the attempt
was answered long ago: this delivery writes nothing). Whether a call may be made, what it is
charged and where the request goes next is the attempt's lifecycle
(:mod:`aipool.attempt.lifecycle`); the runner asks it, and its parts, each on the one below, do
the rest:

- :mod:`aipool.attempt.runner` (here): the entry points, a new request's first hop and the hop a
  journey points at, up to the lifecycle's ``begin``;
- :mod:`aipool.attempt.call`: the call within its bound, and how it ended;
- :mod:`aipool.attempt.forwarding`: where the request goes next, or its terminal answer;
- :mod:`aipool.attempt.records`: the attempts' events and rows, and ``finish``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from functools import partial
from typing import TypeVar

from redis.exceptions import RedisError

from aipool import lanes
from aipool.attempt import task_ids
from aipool.attempt.call import HopCall
from aipool.attempt.event import Observer
from aipool.attempt.kept_answer import completion_from_json
from aipool.attempt.layout import Busy, Call, Ended, Foreign, Kept
from aipool.attempt.lifecycle import AttemptBook, new_owner
from aipool.attempt.records import FINISH_RETRY_S
from aipool.attempt.visit import Done, Drop, Forward, Pricing, Visit
from aipool.backlog import QUEUE_WAIT
from aipool.contract import result
from aipool.contract.completion import Completion
from aipool.contract.journey import Journey, Route
from aipool.contract.request import Request
from aipool.errors import InvalidJourney, ReplicasBehind
from aipool.providers import get_provider
from aipool.providers.base import Provider
from aipool.redis.riding import Rider
from aipool.redis.sentinel import pool_place
from aipool.settings import settings

log = logging.getLogger("aipool.hop")
T = TypeVar("T")

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


Timeouts = Callable[[str], float]
#: How long the oldest message of each of some lanes has waited (s): :func:`aipool.backlog.oldest_ages`.
LaneWaits = Callable[[list[str]], Mapping[str, float]]


def _free(provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    return Decimal(0)


def _provider_timeout(provider: str) -> float:
    return float(settings().providers[provider].timeout_s)


class HopRunner(HopCall):
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
        self.price_completion = price_completion
        #: Reads the lanes' backlogs; without it, no hop is passed over for its queue's wait.
        self.lane_waits = lane_waits

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
        expired: bool = False,
    ) -> Done | Forward:
        """A new request: pick the first hop of ``route`` that can take it (none, when its
        message has ``expired``: :class:`Visit`).

        ``seen_at``: when the pool first saw the request waiting (Redis's time, from the lane's
        stamps), if before now: its deadline counts from then.

        When every provider is passed over the terminal hop (static answer or refusal) is answered
        here, unless ``answer_terminal`` is false (a producer, which has no business answering):
        then the request is forwarded to the ``router`` queue positioned at its terminal hop.
        """
        journey = Journey(id=journey_id, route=route, received_at=seen_at)
        visit = Visit(request, request_id, journey, self.pricing, expired=expired)
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
        expired: bool = False,
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
            visit = Visit(
                request,
                request_id,
                Journey(id=journey_id, route=route),
                self.pricing,
                expired=expired,
            )
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
            expired=expired,
        )

    def claim_rider(self, request_id: str, journey_id: str) -> Rider:
        """The claim of ``request_id`` for ``journey_id``, to ride with the request's message
        (:mod:`aipool.redis.riding`); :meth:`reused` reads what became of it."""
        return Rider(
            pool_place(self.book.client.connection_pool),
            partial(
                task_ids.take,
                request_id=request_id,
                journey_id=journey_id,
                keep_s=self.book.answer_keep,
            ),
        )

    def reused(self, request_id: str, journey_id: str, rider: Rider | None = None) -> Done | None:
        """The refusal of a request sent under a task id another request holds
        (:mod:`aipool.attempt.task_ids`), or ``None`` when the id is this request's. A claim
        that rode with the message and took the id (``rider``) is this request's already."""
        if rider is not None and rider.sent and rider.reply is True:
            return None
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

    def run(
        self,
        request: Request,
        request_id: str,
        journey: Journey,
        *,
        expires_at: float | None = None,
    ) -> Done | Forward | Drop:
        """Run the hop at ``journey.position`` (this worker serves its provider's queue).
        ``expires_at``: when the request's message expires (epoch seconds, the pool's clock):
        passed already, this hop and the ones after it are passed over (:class:`Visit`); passing
        during the call, the call is cut there and the chain's end answers
        (:meth:`~aipool.attempt.call.HopCall._failed`)."""
        visit = Visit(
            request,
            request_id,
            journey,
            self.pricing,
            expired=self.expired(expires_at),
            expires_at=expires_at,
        )
        position = journey.position
        hop = journey.hop
        if hop.terminal:
            return self._terminal(visit, position)
        # This hop's own wait is over (the message is here); the ones it may fall back to are not.
        self._pass_over_long_waits(visit, range(position + 1, len(journey.route.chain)))
        owner = new_owner()
        bound = self.timeouts(hop.provider)

        def begin() -> Call | Kept | Busy | Ended | Foreign:
            if self._until_expiry(visit) <= 0:
                visit.expire()  # it passed while Redis was asked again: no call is begun
            return self.book.begin(
                visit.header,
                position,
                owner=owner,
                bound_s=self._bound(visit, position, bound),
                abandoned_row=lambda start: self._abandoned_row(visit, position, start, owner),
                skips=visit.skips,
            )

        try:
            begun = asked_again(begin)
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
            # A fresh process: no script has told it Redis's time yet, and its host's clock
            # (90 s ahead, say) would make the deadline look spent and pass over every lane with
            # a wait (issue #42). Asked once per process.
            self.book.tell_clock()
        except Exception:  # ages are advice: a Redis that does not answer decides nothing here
            log.debug("lane waits unreadable for request_id=%s", visit.request_id, exc_info=True)
            return
        left = left_of - visit.journey.elapsed_s(self.now())
        for position, lane in candidates.items():
            wait = waits.get(lane, 0.0)
            if wait > 0 and wait >= left:
                visit.skips[position] = QUEUE_WAIT
                visit.waits[chain[position].provider] = (lane, wait)
