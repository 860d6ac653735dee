"""The attempt's lifecycle as a model: random interleavings against the real script on real Redis.

Several simulated workers, each with a host clock that is off the pool's and steps while they run
(``host_clock_steps``: the estimate each corrects from Redis's replies is off until the next one),
deliver and redeliver the messages of a few requests, make calls that answer, fail, time out or
never end (a worker that dies), let time pass (leases end, deadlines pass, days turn) and sweep; a
breaker opens (Ollama's too), a provider pauses itself, the quota is spent from outside the
attempts and raised again from the ledger (beat's restore, the month's spend with it), a script's
reply is lost after it ran and the same delivery asks again (``advance``, ``begin``, ``finish``),
and another request is sent under a task id already claimed. A delivery's bound is its runner's
(the provider's timeout, cut to its share of what the deadline leaves, on that worker's estimate
of the clock), and a call that times out is classified and recorded by the worker's own runner
(``HopRunner._failed``): the model does not pass the verdict in. After every step the pool's
promises are checked:

- a provider is called at most once per attempt;
- the quota, the ledger and the calls made agree: every call is one request, charged exactly what
  its outcome says (the real tokens of an answer, the estimate of a call that may have been billed
  or was abandoned, nothing but the request of a failure that was not billed);
- a paid answer is never thrown away: once an attempt is answered, every later delivery of it gets
  that answer, and the request never goes on to another provider because of it;
- only provider faults count against a breaker, and any success ends a run of failures; a timeout
  counts only when the call had the provider's whole timeout, never when the deadline (or its
  share of it) or the message's expiry (``deliver_expiring``) cut it short, and the producer's
  journey says which it was; a call the expiry cut ends in the chain's end, no later provider
  called;
- a call never runs past its bound, nor past the deadline on the pool's clock, whatever the
  worker's host clock says;
- a provider that declared a retry delay (a 429's ``Retry-After`` or ``RetryInfo``) is paused for
  the whole pool: no delivery calls it and no routing chooses it until the delay has passed, and
  the 429 never counts against its breaker;
- a script asked again by the same delivery returns its first outcome (the same call, charged
  once; the same next hop);
- every ended call is one ledger row (journey, attempt, call), compared with the calls made
  without deduplicating rows per attempt, on every provider, Ollama included: two rows of one
  call fail the check, but for an abandoned call's estimate and its late answer (or its late
  end after a restart), which the drain resolves;
- the quota counters and the month's spend hold the calls' charges plus what was spent from
  outside or raised from the ledger, each counted once (the restore never lowers a counter);
- a task id claimed by its request's first hop is refused to another request, and kept by a copy;
- Redis restarting empty with calls in flight (``redis_restarts_empty``) forgets what lived in
  Redis, not the calls made: the quota and spend hold what was charged since, a late finish of a
  call made before it is booked once whoever owns its record now, and ended calls equal the rows
  drained to PostgreSQL, waiting in the spool or lost with it (the bound: rows not yet drained
  are lost, and a call in flight at the restart whose worker dies is never booked;
  docs/attempts.md).

``make test`` runs a bounded number of interleavings; ``make soak-model`` (or
``AIPOOL_TEST_MODEL_EXAMPLES``) runs more. Failing examples found while the pool's scripts were
being written (and broken on purpose, to see the model catch it) are kept in ``model_examples/``
and replayed first on every run; a run saves new failures in ``.hypothesis/`` only.
"""

from __future__ import annotations

import os
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import redis
from hypothesis import HealthCheck, event, settings
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from aipool.attempt import soft_limit
from aipool.attempt.layout import (
    Busy,
    Call,
    Decision,
    Ended,
    Header,
    Kept,
    Missing,
    Recorded,
    Routed,
    spend_key,
)
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.money import restore_spend
from aipool.attempt.runner import HopRunner
from aipool.attempt.task_ids import claim
from aipool.attempt.timing import FLOOR_S
from aipool.attempt.visit import Forward, Visit
from aipool.contract.completion import Completion
from aipool.contract.journey import Journey
from aipool.contract.request import Request as Asked
from aipool.contract.request import parse_request
from aipool.contract.route import Hop, Route
from aipool.contract.vocabulary import CALLED_OUTCOMES
from aipool.errors import (
    EmptyAnswer,
    ModelRefused,
    ProviderError,
    ProviderTimeout,
    QuotaExceeded,
    ReplicasBehind,
)
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import PENDING_KEY
from aipool.quota import Quota
from aipool.settings import settings as pool_settings
from aipool.settings.provider_limits import BreakerSettings, ProviderLimits, QuotaLimits
from tests.support.attempts import SimulatedPool, answered, begin, failed, result_write
from tests.support.guards import GUARDS_REDIS_URL
from tests.support.sizes import sized

EXAMPLES = sized(80, 1000, "AIPOOL_TEST_MODEL_EXAMPLES")
STEPS = int(os.environ.get("AIPOOL_TEST_MODEL_STEPS", "40"))
EXAMPLES_DIR = Path(__file__).with_name("model_examples")

#: Breakers that never open on their own here (so every counted failure stays visible); quotas
#: tight enough that refusals happen.
LIMITS = {
    **pool_settings().limits,
    "gemini": ProviderLimits(
        BreakerSettings(failure_threshold=1000, recovery_timeout=30),
        QuotaLimits(rpm=6, daily_requests=12, daily_tokens=50_000),
    ),
    "claude": ProviderLimits(
        BreakerSettings(failure_threshold=1000, recovery_timeout=30),
        QuotaLimits(daily_requests=20),
    ),
    "ollama": ProviderLimits(
        BreakerSettings(failure_threshold=1000, recovery_timeout=30), QuotaLimits()
    ),
}
CHAINS = (
    (
        Hop("gemini", "gemini-2.5-flash"),
        Hop("claude", "claude-sonnet-4-5"),
        Hop("static", "static"),
    ),
    (
        Hop("ollama", "llama3.2:3b"),
        Hop("gemini", "gemini-2.5-flash"),
        Hop("claude", "claude-sonnet-4-5"),
        Hop("static", "static"),
    ),
)
PAID = ("gemini", "claude")
#: The local-first route ends the chain on a model's refusal (``refusal_ends``); the other shops
#: a refusal around.
ROUTES = tuple(
    Route("QUERY", 1, chain, "the model test", refusal_ends=chain[0].provider == "ollama")
    for chain in CHAINS
)
#: 23:58:00 on 2026-11-30 in Taipei: the first minutes of the run cross a day and a month.
START = 1_796_054_280.0


def price(provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    """A paid hop costs 10 micro-dollars a token."""
    return Decimal(10 * (input_tokens + output_tokens) if provider in PAID else 0) / 1_000_000


@dataclass
class Request:
    asked: Asked
    route: Route
    header: Header
    first: Any = None  # the route decision, once routed
    received: float | None = None  # when the pool first saw it (the route record's time)

    def visit(self, position: int, expires_at: float | None = None) -> Visit:
        """What a worker's runner sees of the request at ``position`` (its message expiring at
        ``expires_at``, if any)."""
        journey = Journey(
            self.route, position, received_at=self.received, id=self.header.journey_id
        )
        return Visit(self.asked, self.header.request_id, journey, price, expires_at=expires_at)


@dataclass
class Attempt:
    """What the model knows of one attempt."""

    calls: int = 0
    state: str = "new"  # new, calling, answered, failed, abandoned, skipped
    charged: int = 0  # tokens the quota should hold for it
    spent: int = 0  # micro-dollars the month's spend should hold for it
    answered_late: bool = False
    owner: str = ""  # the delivery whose call it is
    behind: bool = False  # admitted, but not called: no replica held its begin


@dataclass
class InFlight:
    worker: int
    request: int
    position: int
    call: Call
    owner: str
    epoch: int = 0  # Redis restarts (empty) before the call was made
    bound: float = 0.0  # the provider's own timeout (the runner's bound before any share)
    #: Whether the request's deadline (or the share of it the runner gave) left the call less
    #: than the provider's timeout, on the pool's clock (None: unknown to the model).
    cut: bool | None = None
    #: When the message the call was made for expires (the pool's clock), if it does.
    expires_at: float | None = None


@dataclass
class Model:
    attempts: dict[tuple[int, int], Attempt] = field(default_factory=dict)

    def of(self, request: int, position: int) -> Attempt:
        return self.attempts.setdefault((request, position), Attempt())


class AttemptLifecycle(RuleBasedStateMachine):
    messages = Bundle("messages")
    calls = Bundle("calls")
    #: Whether Redis may restart empty (the failover model restores a replica's copy instead).
    restarts_empty = True

    def __init__(self) -> None:
        super().__init__()
        self.client = redis.Redis.from_url(GUARDS_REDIS_URL)
        self.client.flushdb()
        self.pool = SimulatedPool(self.client, LIMITS, now=START, answer_keep=300)
        self.workers: list[AttemptBook] = []
        #: Each worker's host clock's offset from the pool's (it steps: host_clock_steps).
        self.skews: list[float] = []
        #: What the quota counters and the month's spend hold beyond the model's calls: spent
        #: from outside the attempts (quota_spent_outside), or raised from the ledger
        #: (quota_restored_from_ledger). Per provider: (requests, tokens).
        self.outside: dict[str, tuple[int, int]] = {}
        self.outside_spent = 0
        #: Calls that finished after a restart their record did not survive.
        self.crossed: set[str] = set()
        self.requests: list[Request] = []
        self.model = Model()
        self.opened: set[str] = set()
        self.failures: dict[str, int] = {}
        #: Until when each provider is paused by the retry delay it declared (pool time).
        self.paused: dict[str, float] = {}
        #: Task ids claimed by their request's first hop; replies lost and asked again.
        self.claimed: set[str] = set()
        self.lost_replies = 0
        #: Redis restarting empty: what the model knew of each earlier Redis (its attempts), the
        #: rows the drain took into PostgreSQL (they survive), the rows the spool held when Redis
        #: restarted (lost), and the owners that died mid-call: a call in flight at a restart
        #: whose worker dies is never booked (the row its sweep would have booked was in its
        #: record; docs/attempts.md), so its attempt stays ``calling`` in its Redis's model.
        self.epoch = 0
        self.earlier: list[Model] = []
        self.drained: list[UsageRecord] = []
        self.drained_since: list[UsageRecord] = []  # since the last restart
        self.lost_rows: list[UsageRecord] = []
        self.dead: set[str] = set()
        #: Requests with any message from before the last restart (their records are gone).
        self.stale: set[int] = set()
        #: What the late finishes of calls made before the last restart charged since.
        self.late_charged: dict[str, tuple[int, int]] = {}
        self.late_spent = 0
        self.late_owners: set[str] = set()
        self.restarts = 0
        #: How many times the workers had written the stored hop configuration when Redis last
        #: restarted empty (each restart loses it).
        self.loads_before = 0

    def teardown(self) -> None:
        self.client.flushdb()
        self.client.close()

    @initialize(
        skews=st.lists(st.floats(-120, 120), min_size=2, max_size=3),
        deadlines=st.lists(
            st.one_of(st.none(), st.sampled_from([5.0, 45.0, 200.0])), min_size=3, max_size=3
        ),
        chains=st.lists(st.sampled_from(range(len(CHAINS))), min_size=3, max_size=3),
    )
    def pool_of_workers(
        self, skews: list[float], deadlines: list[float | None], chains: list[int]
    ) -> None:
        self.skews = list(skews)
        self.workers = [
            self.pool.worker(partial(self.skews.__getitem__, i)) for i in range(len(skews))
        ]
        for i, (deadline, chain) in enumerate(zip(deadlines, chains, strict=True)):
            payload: dict[str, Any] = {"prompt": f"question {i}", "max_tokens": 100 + 50 * i}
            if deadline is not None:
                payload["deadline_s"] = deadline
            asked = parse_request(payload)
            route = ROUTES[chain]
            journey = Journey(route, id=uuid.uuid4().hex)
            # The header every worker builds from the request (its costs: 10 micro-dollars a
            # token of a paid hop's estimate).
            h = Visit(asked, f"request-{i}", journey, price).header
            self.requests.append(Request(asked, route, h))

    # -- rules ------------------------------------------------------------------------------

    @rule(target=messages, request=st.integers(0, 2), worker=st.integers(0, 2), lost=st.booleans())
    def route(self, request: int, worker: int, lost: bool) -> Any:
        """A producer (or the router) routes the request; a retry routes it again. ``lost``: the
        reply to ``advance`` was lost after the script ran, and the same router asks again."""
        req = self.requests[request]
        self._claim(req.header)
        routed = self._worker(worker).route(req.header)
        assert isinstance(routed, Routed)
        if lost:
            self.lost_replies += 1
            again = self._worker(worker).route(req.header)
            # The first outcome again: the same next hop, trail and start of the deadline.
            assert (again.decision, again.received) == (routed.decision, routed.received), (
                routed,
                again,
            )
        req.received = routed.received
        # A request routed again (a producer's retry) goes where it went the first time.
        if req.first is not None:
            assert routed.decision == req.first
        elif self.model.of(request, 0).state != "new":
            # A copy of a request sent straight goes to that first hop's attempt, whatever the
            # breakers say now: its answer, its call in hand or its choice decides there.
            assert routed.decision == Decision(req.header.chain[0].provider), routed
        else:
            # A paused provider is never chosen first.
            assert not self._paused(routed.decision.next), routed
        req.first = routed.decision
        return self._forward(request, routed.decision.next)

    @rule(target=messages, request=st.integers(0, 2))
    def send_straight(self, request: int) -> Any:
        """A producer sends a request without a deadline straight to its chain's first provider
        when that hop is free and unlimited (``HopRunner.dispatch``), unrouted: no route record;
        that worker's admission decides."""
        req = self.requests[request]
        if req.header.deadline_s is not None or req.header.costs[0] or self._limited(req.header, 0):
            return multiple()
        self._claim(req.header)
        return self._forward(request, req.header.chain[0].provider)

    @rule(
        target=calls,
        message=messages,
        worker=st.integers(0, 2),
        lost=st.booleans(),
        held=st.sampled_from([True, True, True, False]),
    )
    def deliver(self, message: tuple[int, int], worker: int, lost: bool, held: bool) -> Any:
        """A message is delivered; it stays in the bundle, so it may be delivered again (a
        redelivery, a requeue, a producer's duplicate). ``lost``: the reply to ``begin`` was
        lost after the script ran, and the same delivery asks again (the runner's retry).
        ``held``: a replica held a paid call's ``begin``; when none did (and the pool requires
        one), the runner ends the call without making it (``HopRunner._behind``)."""
        return self._deliver(message, worker, lost, held)

    @rule(
        target=calls,
        message=messages,
        worker=st.integers(0, 2),
        expires_in=st.sampled_from([0.2, 1.0, 1.5, 3.0]),
    )
    def deliver_expiring(self, message: tuple[int, int], worker: int, expires_in: float) -> Any:
        """A message is delivered with its producer's expiry (``aipool_expires_at``)
        ``expires_in`` seconds ahead on the pool's clock: the runner cuts the call's bound at
        it, on its worker's estimate of the clock, as at the deadline (an expiry that estimate
        reads as passed already passes the hop over: ``deliver_expired``). A call it cut that
        times out (``call_times_out``) is the deadline's kind of cut: never against the
        breaker, its estimate charged, and the chain's end answers."""
        expires_at = self.pool.time.now + expires_in
        if self._runner(worker).expired(expires_at):
            self._deliver_expired(message, worker)
            return multiple()
        return self._deliver(message, worker, lost=False, held=True, expires_at=expires_at)

    def _deliver(
        self,
        message: tuple[int, int],
        worker: int,
        lost: bool,
        held: bool,
        expires_at: float | None = None,
    ) -> Any:
        request, position = message
        h = self.requests[request].header
        book = self._worker(worker)
        owner = uuid.uuid4().hex
        before = self.model.of(request, position).state
        # The runner's bound: the provider's timeout, cut to the call's share of what the
        # deadline leaves and at the message's expiry (on this worker's estimate of the pool's
        # clock) while later providers remain; begin cuts it at the deadline itself, on Redis's
        # clock.
        runner = self._runner(worker)
        timeout = runner.timeouts(h.chain[position].provider)
        bound = runner._bound(self.requests[request].visit(position, expires_at), position, timeout)
        reply = begin(book, h, position, owner=owner, bound=bound)
        if lost:
            self.lost_replies += 1
            again = begin(book, h, position, owner=owner, bound=bound)
            # A retry returns the first outcome: the same call, charged once.
            assert type(again) is type(reply), (reply, again)
            if isinstance(reply, Call):
                assert (again.now, again.generation, again.lease) == (
                    reply.now,
                    reply.generation,
                    reply.lease,
                ), (reply, again)
            elif isinstance(reply, Ended):
                assert again.decision == reply.decision, (reply, again)
        attempt = self.model.of(request, position)
        if before == "answered":
            # A paid answer is never thrown away.
            assert isinstance(reply, Kept), reply
        if isinstance(reply, Call):
            # A provider paused by its own declared delay is never called during the pause.
            assert not self._paused(h.chain[position].provider), (reply, self.paused)
            # A call never runs past its bound, nor past the deadline on the pool's clock.
            assert reply.limit_s <= bound + 1e-6, (reply, bound)
            received = self.requests[request].received
            cut: bool | None = bound < timeout - 1e-6
            if h.deadline_s is not None:
                if received is not None and request not in self.stale:
                    left = received + h.deadline_s - self.pool.time.now
                    assert reply.limit_s <= left + 1e-5, (reply, left)
                    # Nor is it cut below the floor a share keeps while the deadline leaves it
                    # (aipool.attempt.timing), whatever this worker's host clock says (the
                    # message's expiry cuts it where it falls).
                    if before == "new" and expires_at is None:
                        floor = min(FLOOR_S, left, timeout)
                        assert reply.limit_s >= floor - 1e-5, (reply, left, self.skews)
                    cut = cut or left < timeout - 1e-6
                else:
                    cut = None
            attempt.calls += 1
            attempt.state = "calling"
            attempt.charged = h.tokens if self._limited(h, position) else 0
            attempt.spent = h.costs[position]
            attempt.owner = owner
            if not held and (h.costs[position] > 0 or self._limited(h, position)):
                try:
                    runner._behind(
                        self.requests[request].visit(position),
                        position,
                        ReplicasBehind("no replica held the begin", reply),
                        owner,
                    )
                finally:
                    soft_limit.release()
                # Not called: the request counted, nothing else charged, a $0 row.
                attempt.state = "failed"
                attempt.charged = 0
                attempt.spent = 0
                attempt.behind = True
                event("begin not held by a replica")
                return multiple()
            return InFlight(
                worker, request, position, reply, owner, self.epoch, timeout, cut, expires_at
            )
        if isinstance(reply, Kept):
            assert attempt.state == "answered"
        elif isinstance(reply, Busy):
            assert attempt.state == "calling"
        elif isinstance(reply, Ended):
            if attempt.state in ("new", "skipped"):
                attempt.state = "skipped"
            elif attempt.state == "calling":
                # The lease ended with no outcome: abandoned now, its estimate kept.
                attempt.state = "abandoned"
            else:
                assert reply.state == attempt.state, (reply, attempt)
        return multiple()

    @rule(message=messages, worker=st.integers(0, 2))
    def deliver_expired(self, message: tuple[int, int], worker: int) -> None:
        """A message is delivered after its producer's expiry (``aipool_expires_at``): the
        runner passes its hop and every later one over, as for a spent deadline. Whatever else
        happened to the attempt, no provider is called for it, an answer already paid for is
        kept, and a call in hand stays its owner's."""
        self._deliver_expired(message, worker)

    def _deliver_expired(self, message: tuple[int, int], worker: int) -> None:
        request, position = message
        asked = self.requests[request]
        mine = asked.visit(position)
        skips = Visit(mine.request, mine.request_id, mine.journey, price, expired=True).skips
        attempt = self.model.of(request, position)
        before = attempt.state
        reply = begin(self._worker(worker), asked.header, position, skips=skips)
        assert not isinstance(reply, Call), (before, reply)
        if before == "answered":
            assert isinstance(reply, Kept), reply
        elif before == "calling":
            if isinstance(reply, Ended):  # its lease ended with no outcome
                attempt.state = "abandoned"
            else:
                assert isinstance(reply, Busy), reply
        elif isinstance(reply, Ended):
            if before in ("new", "skipped"):
                attempt.state = "skipped"
                if before == "new":
                    # Passed over for its expiry; or, a copy sent straight to a hop the route
                    # had passed over, with the route's reason (it follows the route, no call).
                    first = asked.first
                    trail = {p.provider: p.code for p in first.passed} if first else {}
                    code = trail.get(asked.header.chain[position].provider, "deadline")
                    assert (reply.state, reply.code) == ("skipped", code), reply
            else:
                assert reply.state == before, (reply, before)
        event("delivered after its expiry")

    @rule(call=consumes(calls), tokens=st.integers(1, 400), lost=st.booleans())
    def call_answers(self, call: InFlight, tokens: int, lost: bool) -> None:
        """The owner's call answers with ``tokens`` tokens; ``lost``: the reply to ``finish``
        was lost after the script ran, and the owner asks again."""
        h = self.requests[call.request].header
        attempt = self.model.of(call.request, call.position)
        cost = 10 * tokens if h.costs[call.position] else 0
        book = self._worker(call.worker)
        reply = answered(book, h, call.position, call.call, call.owner, tokens, cost)
        assert isinstance(reply, Recorded | Missing), reply
        if lost:
            self.lost_replies += 1
            again = answered(book, h, call.position, call.call, call.owner, tokens, cost)
            assert isinstance(again, Recorded | Missing), again
        if call.epoch != self.epoch:
            self._finished_late(call, reply, "answered", tokens, cost)
            return
        self.failures[h.chain[call.position].provider] = 0
        if attempt.state == "abandoned":
            attempt.answered_late = True
        attempt.state = "answered"
        attempt.charged = tokens if self._limited(h, call.position) else 0
        attempt.spent = cost

    @rule(
        target=messages,
        call=consumes(calls),
        outcome=st.sampled_from(["fault", "rejected"]),
        lost=st.booleans(),
    )
    def call_fails(self, call: InFlight, outcome: str, lost: bool) -> Any:
        """The owner's call fails: a provider fault, or a rejection (not the provider's fault);
        ``lost``: the reply to ``finish`` was lost after the script ran, and the owner asks
        again. (A timeout is call_times_out's: the runner classifies it.)"""
        h = self.requests[call.request].header
        attempt = self.model.of(call.request, call.position)
        verdict = "failure" if outcome == "fault" else "release"
        billed = False

        def finish() -> Any:
            return failed(
                self._worker(call.worker),
                h,
                call.position,
                call.call,
                call.owner,
                verdict=verdict,
                billed=billed,
            )

        reply = finish()
        if call.epoch != self.epoch:
            if lost:
                self.lost_replies += 1
                finish()
            self._finished_late(
                call,
                reply,
                "failed",
                h.tokens if billed else 0,
                h.costs[call.position] if billed else 0,
            )
            return multiple()
        assert isinstance(reply, Ended), reply
        if lost:
            self.lost_replies += 1
            again = finish()
            assert isinstance(again, Ended) and again.decision == reply.decision, (reply, again)
        provider = h.chain[call.position].provider
        if verdict == "failure":
            self.failures[provider] = self.failures.get(provider, 0) + 1
        if attempt.state == "calling":
            attempt.state = "failed"
            attempt.charged = h.tokens if (billed and self._limited(h, call.position)) else 0
            attempt.spent = h.costs[call.position] if billed else 0
        return self._forward(call.request, reply.decision.next)

    @rule(target=messages, call=consumes(calls))
    def call_times_out(self, call: InFlight) -> Any:
        """The provider never answers: the call is cut at its limit (that much time passes) and
        the worker's own runner classifies the timeout and records it (``HopRunner._failed``,
        its ledger row and charge included). A call given the provider's whole timeout that
        timed out is the provider's fault; one the request's deadline (or its share of it) cut
        short says nothing about the provider: never counted against its breaker. Either may
        have been billed: the estimate stays charged."""
        req = self.requests[call.request]
        h = req.header
        provider = h.chain[call.position].provider
        attempt = self.model.of(call.request, call.position)
        self.pool.time.advance(call.call.limit_s)
        error = ProviderTimeout(f"{provider} did not answer in {call.call.limit_s:.3g} s")
        visit, step = self._runner_failed(call, error)
        # Whether the call had the provider's whole timeout, as the model knows it (from the
        # deadline on the pool's clock and the bound given), else from the call's limit.
        whole = not call.cut if call.cut is not None else call.call.limit_s >= call.bound - 1e-6
        # Without a deadline only the message's expiry cuts a call short.
        expiry_cut = call.expires_at is not None and not whole and h.deadline_s is None
        event(
            "a call timed out: "
            + (
                "its provider's whole timeout"
                if whole
                else "cut short by the message's expiry"
                if expiry_cut
                else "cut short by the deadline (or the expiry)"
            )
        )
        # The call's own attempt (the hops its decision passed over follow it).
        (recorded,) = [a for a in visit.journey.attempts if a.provider == provider]
        # The producer's journey says which it was: the provider's timeout or the deadline's cut.
        assert recorded.code == ("timeout" if whole else "deadline"), (recorded, call)
        if expiry_cut:
            # The producer has given up: unless an earlier outcome chose the next hop (the
            # call's record abandoned, or gone with Redis), no provider after it is called, and
            # the chain's end answers.
            assert "expired during the call" in (recorded.error or ""), recorded
            if call.epoch == self.epoch and attempt.state == "calling":
                assert step.journey.hop.terminal, step.journey
        if call.epoch != self.epoch:
            self._finished_late(call, None, "failed", h.tokens, h.costs[call.position])
            return multiple()
        if whole:
            self.failures[provider] = self.failures.get(provider, 0) + 1
        if attempt.state == "calling":
            attempt.state = "failed"
            attempt.charged = h.tokens if self._limited(h, call.position) else 0
            attempt.spent = h.costs[call.position]
        return self._forward(call.request, step.journey.hop.provider)

    @rule(target=messages, call=consumes(calls), tokens=st.integers(1, 400), refused=st.booleans())
    def call_answers_unusable(self, call: InFlight, tokens: int, refused: bool) -> Any:
        """The provider answers with nothing usable (the model refused, or said nothing) and
        bills the ``tokens`` it used; the worker's runner records it (``HopRunner._failed``):
        every billed token kept, nothing against the breaker, and a refusal on a route that
        ends on one goes to the chain's terminal hop."""
        req = self.requests[call.request]
        h = req.header
        hop = h.chain[call.position]
        attempt = self.model.of(call.request, call.position)
        half = tokens // 2
        billed = Completion(
            text="", model=hop.model, input_tokens=half, output_tokens=tokens - half
        )
        error = (ModelRefused if refused else EmptyAnswer)("nothing usable", billed=billed)
        _, step = self._runner_failed(call, error)
        cost = 10 * tokens if hop.provider in PAID else 0
        if call.epoch != self.epoch:
            self._finished_late(call, None, "failed", tokens, cost)
            return multiple()
        if attempt.state == "calling":
            attempt.state = "failed"
            attempt.charged = tokens if self._limited(h, call.position) else 0
            attempt.spent = cost
            if refused and req.route.refusal_ends:
                assert step.journey.hop.terminal, step.journey
        return self._forward(call.request, step.journey.hop.provider)

    @rule(target=messages, call=consumes(calls), delay=st.sampled_from([5.0, 20.0, 90.0]))
    def call_rate_limited(self, call: InFlight, delay: float) -> Any:
        """The owner's call is answered 429 with a declared retry delay: the provider is paused
        for the whole pool that long, and nothing counts against its breaker."""
        h = self.requests[call.request].header
        attempt = self.model.of(call.request, call.position)
        reply = failed(
            self._worker(call.worker),
            h,
            call.position,
            call.call,
            call.owner,
            verdict="release",
            code="rate_limited",
            pause_s=delay,
        )
        if call.epoch != self.epoch:
            # The record holding the call is gone: the pause is not kept (a late 429).
            self._finished_late(call, reply, "failed", 0, 0)
            return multiple()
        assert isinstance(reply, Ended), reply
        provider = h.chain[call.position].provider
        # The script pauses from Redis's time when the outcome is recorded: the pool's now.
        until = self.pool.time.now + delay
        self.paused[provider] = max(self.paused.get(provider, 0.0), until)
        if attempt.state == "calling":
            attempt.state = "failed"
            attempt.charged = 0
            attempt.spent = 0
        return self._forward(call.request, reply.decision.next)

    @rule(request=st.integers(0, 2))
    def task_id_reused(self, request: int) -> None:
        """Another request is sent under this request's task id: once the first one's hop
        claimed the id, the other is refused it; a copy of the first keeps it."""
        h = self.requests[request].header
        if h.request_id not in self.claimed:
            return
        assert not claim(self.client, h.request_id, uuid.uuid4().hex, 86_400)
        assert claim(self.client, h.request_id, h.journey_id, 86_400)

    @rule(call=consumes(calls))
    def worker_dies(self, call: InFlight) -> None:
        """The owner is SIGKILLed mid-call: no outcome will ever come from it."""
        self.dead.add(call.owner)

    @rule()
    def ledger_drained(self) -> None:
        """Beat's drain moves the spool's rows into PostgreSQL, where a restart cannot reach
        them (the model keeps them; the drain's own storing is tested in tests/ledger/)."""
        with self.client.pipeline(transaction=True) as pipe:
            pipe.lrange(PENDING_KEY, 0, -1)
            pipe.delete(PENDING_KEY)
            raw, _ = pipe.execute()
        rows = [UsageRecord.from_json(r) for r in reversed(raw)]
        self.drained.extend(rows)
        self.drained_since.extend(rows)

    @precondition(lambda self: self.restarts_empty and bool(self.requests))
    @rule(drained_first=st.booleans())
    def redis_restarts_empty(self, drained_first: bool) -> None:
        """Redis, keeping nothing on disk, restarts with calls in flight: every record, quota,
        breaker, pause, route, claim, kept answer and undrained ledger row is gone (its scripts
        too); the rows drained before it are in PostgreSQL. Calls in flight finish late into
        the new Redis; messages already sent are delivered again and may call again."""
        if drained_first:
            self.ledger_drained()
        lost = self._spool()
        self.lost_rows.extend(lost)
        if drained_first:
            assert not lost, lost
        self.client.flushdb()
        self.client.script_flush()
        self.earlier.append(self.model)
        self.stale |= {request for request, _ in self.model.attempts}
        self.model = Model()
        self.opened = set()
        self.failures = {}
        self.paused = {}
        self.claimed = set()
        for req in self.requests:
            req.first = None
        self.late_charged = {}
        self.late_spent = 0
        self.late_owners = set()
        self.drained_since = []
        self.outside = {}
        self.outside_spent = 0
        for req in self.requests:
            req.received = None
        self.epoch += 1
        self.restarts += 1
        self.loads_before = self._config_loads()
        event("Redis restarted empty")

    @rule(
        provider=st.sampled_from(PAID),
        worker=st.integers(0, 2),
        tokens=st.integers(0, 30_000),
    )
    def quota_spent_outside(self, provider: str, worker: int, tokens: int) -> None:
        """Something other than an attempt spends the provider's quota (the quota's own
        reserve and settle): refusals follow from it, and it is counted once."""
        quota: Quota = self._worker(worker).quotas[provider]
        try:
            reservation = quota.reserve(f"outside-{uuid.uuid4().hex}", 0, tokens)
        except QuotaExceeded:
            return
        quota.settle(reservation, tokens)
        requests, held = self.outside.get(provider, (0, 0))
        self.outside[provider] = (requests + 1, held + tokens)
        event("quota spent from outside")

    @rule(worker=st.integers(0, 2))
    def quota_restored_from_ledger(self, worker: int) -> None:
        """Beat's restore (``aipool.restore_quotas``) raises today's counters to what the ledger
        (the rows drained to PostgreSQL) holds, and gives the month's spend back when Redis lost
        it: it never lowers a counter, so whatever it adds is counted beside the calls."""
        book = self._worker(worker)
        rows: dict[tuple[str, int, str], UsageRecord] = {}
        for rec in self.drained:
            key = (rec.journey_id, rec.attempt, rec.call_id)
            if rec.outcome in CALLED_OUTCOMES and (key not in rows or rec.success):
                rows[key] = rec
        for provider in PAID:
            mine = [rec for rec in rows.values() if rec.provider == provider]
            tokens = sum(rec.input_tokens + rec.output_tokens for rec in mine)
            before = self._quota(provider)
            after = book.quotas[provider].restore(len(mine), tokens, tokens)
            now = self._quota(provider)
            assert now[0] >= before[0] and now[1] >= before[1], (before, now)
            assert (after["daily_requests"], after["daily_tokens"]) >= (len(mine), tokens)
            requests, held = self.outside.get(provider, (0, 0))
            self.outside[provider] = (
                requests + now[0] - before[0],
                held + now[1] - before[1],
            )
        month = book.configs.periods(self.pool.time.now, PAID[0])[1].label
        by_service: defaultdict[str, Decimal] = defaultdict(Decimal)
        for rec in rows.values():
            by_service[rec.service] += rec.cost_usd
        if restore_spend(self.client, month, by_service):
            self.outside_spent += int(self.client.hget(spend_key(month), "all") or 0)
            event("spend restored from the ledger")

    @rule(worker=st.integers(0, 2), skew=st.sampled_from([-600.0, -90.0, 0.0, 90.0, 3_600.0]))
    def host_clock_steps(self, worker: int, skew: float) -> None:
        """A worker's host clock steps (NTP, a VM resumed): until a script tells it Redis's time
        again, its estimate of the pool's clock is off by the step, and so is what its runner
        thinks is left of a deadline; the periods it names may be the wrong day or month."""
        self.skews[worker % len(self.skews)] = skew

    @rule(seconds=st.sampled_from([1.0, 5.0, 20.0, 61.0, 400.0]))
    def time_passes(self, seconds: float) -> None:
        self.pool.time.advance(seconds)

    @rule(worker=st.integers(0, 2))
    def sweep(self, worker: int) -> None:
        swept = self._worker(worker).sweep()
        calling = [a for a in self.model.attempts.values() if a.state == "calling"]
        assert swept <= len(calling)
        # The model learns which were abandoned from the records (the script decides by lease).
        for (request, position), attempt in self.model.attempts.items():
            if attempt.state == "calling":
                h = self.requests[request].header
                key = f"aipool:attempt:{h.journey_id}:{h.chain[position].provider}"
                if self.client.hget(key, "state") == b"abandoned":
                    attempt.state = "abandoned"

    @precondition(lambda self: bool(self.requests))
    @rule(provider=st.sampled_from(["gemini", "claude", "ollama"]))
    def breaker_opens(self, provider: str) -> None:
        """The provider fails elsewhere and its breaker opens: it gates new calls only."""
        state = f"aipool:breaker:{provider}:state"
        gen = int(self.client.hget(state, "gen") or 0) + 1
        self.client.hset(
            state, mapping={"state": "open", "gen": gen, "opened_at": self.pool.time.now}
        )
        self.opened.add(provider)

    # -- the result written with the answer (#44) ---------------------------------------------

    @rule(call=consumes(calls), tokens=st.integers(1, 400), lost=st.booleans())
    def call_answers_with_its_result(self, call: InFlight, tokens: int, lost: bool) -> None:
        """As ``call_answers``, with the producer's result written by the same ``finish`` (the
        result backend on the attempts' Redis, issue #44): the first answer's result is the
        producer's, a later one (a late finish, another call after a restart) never replaces it,
        and a ``finish`` asked again changes nothing."""
        h = self.requests[call.request].header
        write = result_write(h, call.owner)
        before = self.client.get(write.key)
        # The worker's own book (a subclass's _worker may wrap it anew each time it is asked).
        book = self.workers[call.worker % len(self.workers)]

        # The model's own call_answers, its finish carrying the result (the runner's, when the
        # task hands it a writer).
        def finish(*args: Any, **kwargs: Any) -> Any:
            return AttemptBook.finish(book, *args, **{**kwargs, "result": write})

        book.finish = finish  # type: ignore[method-assign]
        try:
            self.call_answers(call, tokens, lost)
        finally:
            del book.finish
        assert self.client.get(write.key) == (before or write.value.encode())
        event("an answer's result written with it")

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def one_call_per_attempt(self) -> None:
        assert all(a.calls <= 1 for a in self.model.attempts.values())

    @invariant()
    def quota_ledger_and_calls_agree(self) -> None:
        if not self.workers:
            return
        for provider in ("gemini", "claude"):
            calls = charged = 0
            for (request, position), attempt in self.model.attempts.items():
                if self.requests[request].header.chain[position].provider == provider:
                    calls += attempt.calls
                    charged += attempt.charged
            late_requests, late_tokens = self.late_charged.get(provider, (0, 0))
            outside_requests, outside_tokens = self.outside.get(provider, (0, 0))
            requests, tokens = self._quota(provider)
            assert requests == calls + late_requests + outside_requests, (
                provider,
                requests,
                calls,
                late_requests,
                outside_requests,
            )
            assert tokens == charged + late_tokens + outside_tokens, (
                provider,
                tokens,
                charged,
                late_tokens,
                outside_tokens,
            )
        # The ledger holds one row per ended call, with the tokens the quota holds for it.
        rows = self._ledger()
        for (request, position), attempt in self.model.attempts.items():
            h = self.requests[request].header
            mine = rows.get((h.journey_id, position))
            if attempt.behind:
                assert mine is not None and mine.outcome == "replicas_behind", mine
            elif attempt.state in ("answered", "failed", "abandoned"):
                assert mine is not None and mine.outcome in CALLED_OUTCOMES
                if self._limited(h, position):
                    assert mine.tokens == attempt.charged, (mine, attempt)
            elif attempt.state in ("new", "skipped"):
                assert mine is None

    @invariant()
    def every_ended_call_is_one_row(self) -> None:
        # Calls against rows, not deduplicated per attempt: the ledger keeps one row per call
        # (journey, attempt, call), on every provider, Ollama included.
        rows = self.drained + self._spool() + self.lost_rows
        for provider in ("gemini", "claude", "ollama"):
            # Every Redis's attempts: a call made before a restart is booked by its late finish
            # or was booked before it (drained, or lost with the spool: the documented limit).
            ended = behind = 0
            for model in (*self.earlier, self.model):
                for (request, position), a in model.attempts.items():
                    if self.requests[request].header.chain[position].provider != provider:
                        continue
                    if a.behind:
                        behind += 1
                    elif a.state in ("answered", "failed", "abandoned"):
                        ended += a.calls

            # Every row, none collapsed: a call booked twice shows as two rows of one call.
            per_call: defaultdict[tuple[str, int, str], list[str]] = defaultdict(list)
            for rec in rows:
                if rec.provider == provider and rec.outcome in CALLED_OUTCOMES:
                    per_call[(rec.journey_id, rec.attempt, rec.call_id)].append(rec.outcome)
            for (_, _, call_id), outcomes in per_call.items():
                # One row per call, but for the two the table names: an abandoned call that
                # answered late (its answer's row replaces the estimate's when drained), and an
                # abandoned call that ended after a restart lost its record (its late finish
                # cannot know the sweep booked it; the drain keeps the first).
                assert len(outcomes) == 1 or (
                    len(outcomes) == 2
                    and "abandoned" in outcomes
                    and ("ok" in outcomes or call_id in self.crossed)
                ), (provider, call_id, outcomes)
            assert len(per_call) == ended, (provider, sorted(per_call.items()), ended)
            # A call not made for want of a replica: one $0 row each, none made twice.
            unheld = [
                rec for rec in rows if rec.provider == provider and rec.outcome == "replicas_behind"
            ]
            assert len(unheld) == behind, (provider, unheld, behind)

    @invariant()
    def the_months_spend_is_what_the_calls_cost(self) -> None:
        # The pool's and each service's spend hold every call's estimate while it runs (and
        # after, when it may have been billed or was abandoned), its cost once answered.
        spent = 0
        for key in self.client.scan_iter("aipool:spend:*"):
            spent += int(self.client.hget(key, "all") or 0)
        assert spent == self.outside_spent + self.late_spent + sum(
            a.spent for a in self.model.attempts.values()
        )

    @invariant()
    def an_answered_request_is_not_sent_on(self) -> None:
        for request in range(len(self.requests)):
            if request in self.stale:
                # Its records went with a restart: a redelivery may call again (the limit).
                continue
            answers = [
                a
                for (r, _), a in self.model.attempts.items()
                if r == request and a.state == "answered" and not a.answered_late
            ]
            assert len(answers) <= 1

    @invariant()
    def only_provider_faults_count_and_a_success_ends_the_run(self) -> None:
        for provider in ("gemini", "claude", "ollama"):
            if provider in self.opened:
                continue
            stored = int(self.client.hget(f"aipool:breaker:{provider}:state", "failures") or 0)
            assert stored == self.failures.get(provider, 0), (provider, stored)

    # -- helpers -----------------------------------------------------------------------------

    def _claim(self, h: Header) -> None:
        # The first hop claims the task id for its request; a copy finds its own claim.
        assert claim(self.client, h.request_id, h.journey_id, 86_400)
        self.claimed.add(h.request_id)

    def _finished_late(
        self, call: InFlight, reply: Any, state: str, tokens: int, cost: int
    ) -> None:
        """A call made before Redis restarted empty finished: whoever owns its record now, it
        is booked (its own row, its charge, once: asked again, it books nothing more).
        ``reply``: what ``finish`` said (None: the runner recorded it, and keeps the reply)."""
        assert reply is None or isinstance(reply, Missing), reply
        h = self.requests[call.request].header
        attempt = self.earlier[call.epoch].of(call.request, call.position)
        assert attempt.owner == call.owner and attempt.state in ("calling", "abandoned")
        if attempt.state == "abandoned":
            attempt.answered_late = state == "answered"
        attempt.state = state
        provider = h.chain[call.position].provider
        if self._limited(h, call.position):
            requests, booked = self.late_charged.get(provider, (0, 0))
            self.late_charged[provider] = (requests + 1, booked + tokens)
        self.late_spent += cost
        self.late_owners.add(call.owner)
        self.crossed.add(call.owner)
        event("a call made before a restart finished late")

    def _paused(self, provider: str) -> bool:
        return self.pool.time.now < self.paused.get(provider, float("-inf"))

    @invariant()
    def the_hop_config_is_written_once_per_redis(self) -> None:
        # Every worker names the same stored configuration (one route table, one settings): the
        # first op after Redis started empty finds it missing and writes it, before anything
        # else, and every later op finds it. Reloaded after a restart, the ops went on as before.
        if not self.restarts_empty or not self.workers:
            return
        written = self._config_loads() - self.loads_before
        key = self.workers[0].configs.current(self.pool.table).key
        assert written == self.client.exists(key), (written, self.restarts)
        if written and self.restarts:
            event("the hop config written again after Redis restarted empty")

    def _config_loads(self) -> int:
        return sum(book.configs.loads for book in self.workers)

    def _worker(self, index: int) -> AttemptBook:
        return self.workers[index % len(self.workers)]

    def _runner_failed(self, call: InFlight, error: ProviderError) -> tuple[Visit, Forward]:
        """The owner's runner records its call's failure (``HopRunner._failed``: the verdict,
        the charge, the ledger row, the next hop): the visit it saw, and where it sends the
        request on."""
        visit = self.requests[call.request].visit(call.position, call.expires_at)
        try:
            step = self._runner(call.worker)._failed(
                visit, call.position, call.call, call.owner, call.bound, error, 0.0
            )
        finally:
            soft_limit.release()  # the runner held the soft limit once it had the outcome
        assert isinstance(step, Forward), step
        return visit, step

    def _runner(self, index: int) -> HopRunner:
        """The worker's hop runner: its bound and share of a deadline, and how it records a
        call that timed out (with the worker's own attempt book and estimate of the clock)."""
        return HopRunner(self._worker(index), pricing=price)

    def _forward(self, request: int, provider: str) -> Any:
        chain = self.requests[request].header.chain
        position = next(p for p, hop in enumerate(chain) if hop.provider == provider)
        if chain[position].terminal:
            return multiple()
        return (request, position)

    @staticmethod
    def _limited(h: Header, position: int) -> bool:
        return not LIMITS[h.chain[position].provider].quota.unlimited

    def _quota(self, provider: str) -> tuple[int, int]:
        requests = tokens = 0
        for key in self.client.scan_iter(f"aipool:quota:{provider}:day:*"):
            day = self.client.hgetall(key)
            requests += int(day.get(b"requests", 0))
            tokens += int(day.get(b"tokens", 0))
        return requests, tokens

    def _spool(self) -> list[UsageRecord]:
        """The rows waiting in Redis for the drain, oldest first."""
        return [
            UsageRecord.from_json(raw) for raw in reversed(self.client.lrange(PENDING_KEY, 0, -1))
        ]

    def _ledger(self) -> dict[tuple[str, int], UsageRecord]:
        """This Redis's rows (drained since it started, or waiting) as the drain stores them:
        per attempt, the first success, else the first row; late finishes of calls made before
        a restart are left out (their attempts are the earlier Redis's)."""
        kept: dict[tuple[str, int], UsageRecord] = {}
        for rec in self.drained_since + self._spool():
            if rec.call_id in self.late_owners:
                continue
            key = (rec.journey_id, rec.attempt)
            held = kept.get(key)
            if held is None or (rec.success and not held.success):
                kept[key] = rec
        return kept


AttemptLifecycle.TestCase.settings = settings(
    max_examples=EXAMPLES,
    stateful_step_count=STEPS,
    deadline=None,
    # The committed corpus is replayed, never rewritten by a run; new failures are saved in the
    # run's own .hypothesis/ (copy one into model_examples/ to keep it).
    database=MultiplexedDatabase(
        ReadOnlyDatabase(DirectoryBasedExampleDatabase(str(EXAMPLES_DIR))),
        DirectoryBasedExampleDatabase(".hypothesis/examples"),
    ),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestAttemptLifecycle = AttemptLifecycle.TestCase
