"""The attempt's lifecycle as a model: random interleavings against the real script on real Redis.

Several simulated workers, each with a clock that drifts from the pool's, deliver and redeliver the
messages of a few requests, make calls that answer, fail, time out or never end (a worker that
dies), let time pass (leases end, deadlines pass, days turn) and sweep; a breaker opens (Ollama's
too), a script's reply is lost after it ran and the same delivery asks again (``begin``,
``finish``), and another request is sent under a task id already claimed. After every step the
pool's promises are checked:

- a provider is called at most once per attempt;
- the quota, the ledger and the calls made agree: every call is one request, charged exactly what
  its outcome says (the real tokens of an answer, the estimate of a call that may have been billed
  or was abandoned, nothing but the request of a failure that was not billed);
- a paid answer is never thrown away: once an attempt is answered, every later delivery of it gets
  that answer, and the request never goes on to another provider because of it;
- only provider faults count against a breaker, and any success ends a run of failures;
- a provider that declared a retry delay (a 429's ``Retry-After`` or ``RetryInfo``) is paused for
  the whole pool: no delivery calls it and no routing chooses it until the delay has passed, and
  the 429 never counts against its breaker;
- a script asked again by the same delivery returns its first outcome (the same call, charged
  once; the same next hop);
- every ended call is one ledger row (journey, attempt, call), compared with the calls made
  without deduplicating rows per attempt, on every provider, Ollama included;
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
from dataclasses import dataclass, field
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
)
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.task_ids import claim
from aipool.contract.route import Hop
from aipool.contract.vocabulary import CALLED_OUTCOMES
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import PENDING_KEY
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
#: 23:58:00 on 2026-11-30 in Taipei: the first minutes of the run cross a day and a month.
START = 1_796_054_280.0


@dataclass
class Request:
    header: Header
    first: Any = None  # the route decision, once routed


@dataclass
class Attempt:
    """What the model knows of one attempt."""

    calls: int = 0
    state: str = "new"  # new, calling, answered, failed, abandoned, skipped
    charged: int = 0  # tokens the quota should hold for it
    spent: int = 0  # micro-dollars the month's spend should hold for it
    answered_late: bool = False
    owner: str = ""  # the delivery whose call it is


@dataclass
class InFlight:
    worker: int
    request: int
    position: int
    call: Call
    owner: str
    epoch: int = 0  # Redis restarts (empty) before the call was made


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
        self.workers = [self.pool.worker(skew) for skew in skews]
        for i, (deadline, chain) in enumerate(zip(deadlines, chains, strict=True)):
            chain_hops = CHAINS[chain]
            # A paid hop costs 10 micro-dollars a token of its estimate.
            costs = tuple(10 * (100 + 50 * i) if hop.provider in PAID else 0 for hop in chain_hops)
            h = Header(
                uuid.uuid4().hex,
                f"request-{i}",
                chain_hops,
                deadline,
                100 + 50 * i,
                costs=costs,
            )
            self.requests.append(Request(h))

    # -- rules ------------------------------------------------------------------------------

    @rule(target=messages, request=st.integers(0, 2), worker=st.integers(0, 2))
    def route(self, request: int, worker: int) -> Any:
        """A producer (or the router) routes the request; a retry routes it again."""
        req = self.requests[request]
        self._claim(req.header)
        routed = self._worker(worker).route(req.header)
        assert isinstance(routed, Routed)
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

    @rule(target=calls, message=messages, worker=st.integers(0, 2), lost=st.booleans())
    def deliver(self, message: tuple[int, int], worker: int, lost: bool) -> Any:
        """A message is delivered; it stays in the bundle, so it may be delivered again (a
        redelivery, a requeue, a producer's duplicate). ``lost``: the reply to ``begin`` was
        lost after the script ran, and the same delivery asks again (the runner's retry)."""
        request, position = message
        h = self.requests[request].header
        book = self._worker(worker)
        owner = uuid.uuid4().hex
        before = self.model.of(request, position).state
        reply = begin(book, h, position, owner=owner)
        if lost:
            self.lost_replies += 1
            again = begin(book, h, position, owner=owner)
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
            attempt.calls += 1
            attempt.state = "calling"
            attempt.charged = h.tokens if self._limited(h, position) else 0
            attempt.spent = h.costs[position]
            attempt.owner = owner
            return InFlight(worker, request, position, reply, owner, self.epoch)
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
        outcome=st.sampled_from(["fault", "rejected", "timeout", "short_timeout"]),
        lost=st.booleans(),
    )
    def call_fails(self, call: InFlight, outcome: str, lost: bool) -> Any:
        """The owner's call fails: a provider fault, a rejection (not the provider's fault), a
        timeout (which may have been billed), or a timeout the deadline made short; ``lost``:
        the reply to ``finish`` was lost after the script ran, and the owner asks again."""
        h = self.requests[call.request].header
        attempt = self.model.of(call.request, call.position)
        verdict = "failure" if outcome in ("fault", "timeout") else "release"
        billed = outcome in ("timeout", "short_timeout")

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
        self.epoch += 1
        self.restarts += 1
        event("Redis restarted empty")

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
            requests, tokens = self._quota(provider)
            assert requests == calls + late_requests, (provider, requests, calls, late_requests)
            assert tokens == charged + late_tokens, (provider, tokens, charged, late_tokens)
        # The ledger holds one row per ended call, with the tokens the quota holds for it.
        rows = self._ledger()
        for (request, position), attempt in self.model.attempts.items():
            h = self.requests[request].header
            mine = rows.get((h.journey_id, position))
            if attempt.state in ("answered", "failed", "abandoned"):
                assert mine is not None and mine.outcome in CALLED_OUTCOMES
                if self._limited(h, position):
                    assert mine.tokens == attempt.charged, (mine, attempt)
            elif attempt.state in ("new", "skipped"):
                assert mine is None

    @invariant()
    def every_ended_call_is_one_row(self) -> None:
        # Calls against rows, not deduplicated per attempt: the ledger keeps one row per call
        # (journey, attempt, call), on every provider, Ollama included.
        for provider in ("gemini", "claude", "ollama"):
            ended = sum(
                a.calls
                for (request, position), a in self.model.attempts.items()
                if self.requests[request].header.chain[position].provider == provider
                and a.state in ("answered", "failed", "abandoned")
            )
            # Every Redis's attempts: a call made before a restart is booked by its late finish
            # or was booked before it (drained, or lost with the spool: the documented limit).
            ended += sum(
                a.calls
                for model in self.earlier
                for (request, position), a in model.attempts.items()
                if self.requests[request].header.chain[position].provider == provider
                and a.state in ("answered", "failed", "abandoned")
            )

            def keys(
                rows: list[UsageRecord], provider: str = provider
            ) -> set[tuple[str, int, str]]:
                return {
                    (rec.journey_id, rec.attempt, rec.call_id)
                    for rec in rows
                    if rec.provider == provider and rec.outcome in CALLED_OUTCOMES
                }

            booked = keys(self.drained + self._spool())
            lost = keys(self.lost_rows) - booked
            assert len(booked) + len(lost) == ended, (provider, booked, lost, ended)

    @invariant()
    def the_months_spend_is_what_the_calls_cost(self) -> None:
        # The pool's and each service's spend hold every call's estimate while it runs (and
        # after, when it may have been billed or was abandoned), its cost once answered.
        spent = 0
        for key in self.client.scan_iter("aipool:spend:*"):
            spent += int(self.client.hget(key, "all") or 0)
        assert spent == self.late_spent + sum(a.spent for a in self.model.attempts.values())

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
        is booked (its own row, its charge, once: asked again, it books nothing more)."""
        assert isinstance(reply, Missing), reply
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
        event("a call made before a restart finished late")

    def _paused(self, provider: str) -> bool:
        return self.pool.time.now < self.paused.get(provider, float("-inf"))

    def _worker(self, index: int) -> AttemptBook:
        return self.workers[index % len(self.workers)]

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
