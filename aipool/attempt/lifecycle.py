"""The life of one attempt: one call to one provider at one hop of one request.

Every rule about when the pool may call a provider, what it charges, and what a second delivery
of the same message does lives in this table, implemented by one Lua script (``attempt.lua``,
atomic for the whole pool, on Redis's clock) and driven from Python by :class:`AttemptBook`
alone. An attempt is named by the request's journey id (:mod:`aipool.attempt.identity`) and its
position on the chain.

With ``AIPOOL_REDIS_REPLICA_ACKS`` set, the ``begin`` and ``finish`` of a hop that costs money or
counts against a quota return only once that many replicas hold them, or the timeout passed
(counted; with ``AIPOOL_REDIS_REPLICA_ACK_REQUIRED=1`` such a ``begin`` then calls no one): that
is what bounds the table's failover row (:mod:`aipool.redis.durability`).

States (a hash per attempt, kept ``record_keep`` seconds)::

    new        no record yet
    calling    one delivery (the owner) holds a lease until ``lease``; the quota holds the
               estimate; the breaker's permit (generation, trial slot) is in the record
    answered   the provider answered; the quota holds the real tokens; the answer is kept
               ``answer_keep`` seconds beside the record
    failed     the call was made and failed; the quota holds the estimate if the provider may
               have billed it (a timeout), the tokens it billed if it answered with nothing
               usable (withheld, refused, empty), else nothing but the request; or the
               call was never made because no replica held its ``begin`` (``replicas_behind``,
               with ``AIPOOL_REDIS_REPLICA_ACK_REQUIRED=1``): nothing but the request
    skipped    no call was made (deadline, or the producer's message expiry passed before
               the hop; a provider paused by its own rate limit, breaker open, quota spent,
               a hop that cannot fit)
    abandoned  the owner's lease ended with no outcome (its worker died, or hung past the
               call's bound): the call may have been billed, so the estimate stays charged

Events × states (each cell is what ``attempt.lua`` does; "decide" picks the next hop from the
hops after this one, passing over those the deadline, a rate-limit pause, an open breaker or a
spent quota rule out, and keeps the choice in the record, so every later delivery forwards to
the same place)::

    event \\ state        new                calling                 answered     failed/skipped/abandoned
    deliver (begin)      deadline passed →  lease live: busy, no    the kept     the same next hop and
                         skipped; paused by call (the message comes answer, no   trail as the first time
                         its rate limit →   back a little later);   deadline or  (no deadline or breaker
                         skipped, breaker   lease over: abandoned   breaker      asked again)
                         not asked; breaker (estimate charged, row  asked; gone:
                         refuses → skipped; booked), decide         drop
                         quota refuses →
                         skipped (trial
                         slot freed); else
                         calling (quota
                         reserved, permit)
    call returns         —                  answered: real tokens,  —            abandoned: answered late
    (finish answered)                       answer kept, breaker                 (real tokens replace the
                                            success, ledger row                  estimate, row replaced)
    call returns, its    —                  answered as above, and  —            answered late as above,
    result backend the                      the producer's result                and its result written
    attempts' Redis                         written in the same                  the same way
    (finish answered,                       step: never over a
    with the result)                        SUCCESS, the held
                                            ledger records pushed;
                                            Celery's own store of
                                            it skipped
    call fails           —                  failed: estimate kept   —            abandoned stays; the
    (finish failed)                         if it may have billed,               owner forwards to the
                                            else tokens back;                    kept (or a new) choice
                                            breaker failure if the
                                            provider's fault, else
                                            permit released; ledger
                                            row; decide
    call answers with    —                  failed: every token it  —            as call fails
    nothing usable                          billed kept; permit
    (finish failed,                         released; ledger row;
    billed)                                 decide, or the terminal
                                            hop for a refusal the
                                            route ends on
    call rate-limited    —                  failed: tokens back;    —            as call fails
    with a delay                            permit released; the
    (finish failed,                         provider paused for the
    pause)                                  pool until now + delay
                                            (bounded); decide
    lease expires,       —                  abandoned: estimate     —            —
    sweep                                   charged, row booked
    begin not held by a  —                  failed                  —            —
    replica (ack                            (replicas_behind), no
    required)                               call: tokens back,
                                            permit released, the
                                            request counted, $0
                                            ledger row; decide
    replica promoted,    = new (routed      begin lost → new: a     finish lost  as answered; skipped and
    behind by the last   again)             redelivery calls again, → calling:   abandoned: the same again
    writes (failover)                       the owner's finish      swept
                                            books its row           abandoned,
                                            (missing); not once a   the estimate
                                            replica held begin      charged; not
                                                                    once a
                                                                    replica held
                                                                    it
    breaker opens,       gates this new     nothing: the call runs  nothing      nothing
    quota spent,         call only
    provider paused
    Redis restarts       = new              record gone, or a new   = new        = new
    empty                                   delivery's: a late      (documented limit: Redis
                                            finish books its call   without persistence can pay
                                            whoever owns the        twice: each call booked)
                                            record (its own row,
                                            its charge, an answer's
                                            result; once)
    copy routed, no      = new (decide)     routed here: busy       routed here: routed here: the same
    route record                            there, no call          the kept     next hop and trail
    (advance; the first                                             answer
    hop's attempt, sent
    straight there)
    reply lost after     (never reached     begin: the same call    the first    the first outcome and
    the script ran;      Redis: as the      (what is left of its    outcome      next hop again
    the same delivery    first time)        bound), charged once;   again
    asks again (begin,                      finish: as the first
    finish, advance)                        time (lost record:
                                            booked once)
    copy sent straight   no call: follows   —                       —            —
    to a hop the         the route record
    route passed over    to its hop (the
    (a routed copy went  outcome there)
    further)
    stored hop config    nothing changed:   the same                the same     the same
    missing (restart,    answers config;
    flush, eviction,     the caller writes
    expiry; any op)      it and asks again,
                         once, then as its
                         own row says
    another request      refused            —                       —            —
    under a used task    (task_id_reused):
    id (its first hop)   no call, no
                         record; its
                         refusal replaces
                         the id's result

Rules that follow: an earlier outcome is resolved before the deadline and the breaker are asked;
a live lease is never called twice and never swept; every op is safe to ask again, and the same
delivery asking again gets its first outcome (the runner asks ``begin`` and routing again for
``SCRIPT_RETRY_S`` after Redis failed to answer, before it takes the guards as unavailable);
only a provider's fault counts against its breaker (a timeout the deadline or the message's expiry made short does not, nor an answer with nothing usable in it,
nor a 429 that declared its delay: that pauses the provider instead, and only 429s without one
are counted); any success while CLOSED ends a run of failures; times inside the script are Redis's (``TIME``), and a deadline counts from the route
record, the moment the pool first saw the request, never from a producer's clock. A request
without a deadline whose first hop is free and unlimited may reach ``begin`` with no route record
at all (sent straight, :meth:`~aipool.attempt.runner.HopRunner.dispatch`): ``begin`` needs none,
and the first ``advance`` of a later copy creates it pointing at that first hop whenever its
attempt exists, so the copy finds that attempt's outcome (the answer, the call in hand, the choice
made after it) whatever the breakers say now, and is routed as a new request only when it does not
(the model test's ``send_straight`` rule). A task id names one request: its first hop claims it
for the journey (:mod:`aipool.attempt.task_ids`), and another request sent under it is refused
(``task_id_reused``) with a refusal that replaces whatever the id's result held, so no producer
holding that id reads an answer that may be another request's (the first request's producer, if it
has not read its answer yet, reads the refusal too: a reused id is the producer's bug, and a clear
error is safer than another request's answer).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from aipool.attempt.clock import RedisClock
from aipool.attempt.hop_config import HopConfigs
from aipool.attempt.layout import (
    ADVANCE,
    BEGIN,
    FINISH,
    LEASES_KEY,
    SWEEP,
    Busy,
    Call,
    ConfigMissing,
    Ended,
    Foreign,
    Header,
    Kept,
    Missing,
    Recorded,
    Routed,
    Stale,
    changed_something,
    header_args,
    read_reply,
    result_args,
)
from aipool.attempt.money import MoneyRules
from aipool.attempt.result_write import ResultWrite
from aipool.breaker import Breaker, BreakerState
from aipool.errors import ReplicasBehind
from aipool.ledger.usage_log import PENDING_KEY
from aipool.metrics.replicas import expect_shortfalls
from aipool.quota import Quota
from aipool.quota.storage import ADJUST, ROOM
from aipool.redis.durability import ReplicaAcks, run_acknowledged
from aipool.redis.lua import LuaScripts, compose, source
from aipool.routing.table import RouteTable, load_table
from aipool.settings import settings

_SCRIPTS = LuaScripts(
    "aipool.attempt",
    composed={
        "attempt": compose(
            source("aipool.attempt", "attempt"),
            acquire=source("aipool.breaker", "acquire"),
            record=source("aipool.breaker", "record"),
            refusing=source("aipool.breaker", "refusing"),
            # room before reserve: reserve.lua calls it.
            room=ROOM,
            reserve=source("aipool.quota", "reserve"),
            adjust=ADJUST,
            store_result=source("aipool.attempt", "store_result"),
        )
    },
)

#: How long after a call's bound its lease lasts: time for the owner to record the outcome, also
#: across a Redis that stalls for a while, before anyone may call the attempt abandoned.
LEASE_GRACE_S = 10.0
#: How many times an op is asked again when the caller's estimate of the time named other periods.
_CLOCK_TRIES = 3


def answer_keep_s() -> int:
    """How long an answer is kept for a later delivery of its message: as long as the result it
    became (the producer reads that for ``AIPOOL_RESULT_EXPIRES``), and at least twice the
    visibility timeout, the longest a message taken by a worker can take to come back."""
    s = settings()
    return max(s.result_expires_s, 2 * s.effective_visibility_timeout_s)


def record_keep_s() -> int:
    """How long an attempt's record is kept: a day, and never less than its answer."""
    return max(86_400, answer_keep_s())


Reply = Call | Kept | Busy | Ended | Foreign | Recorded | Missing | Routed


class AttemptBook:
    """The one owner of attempts' transitions, for every process of the pool.

    ``script_time``, when given, is the time the script uses instead of Redis's ``TIME`` (a
    model test moves it by hand); ``clock`` is this process's estimate of that time. ``money``
    and ``table`` are the money rules and the route table (its services) calls are admitted by.
    ``acks``: how many replicas must hold a paid call's ``begin`` and ``finish`` (Redis's
    ``WAIT``, :mod:`aipool.redis.durability`; the settings' by default).
    """

    def __init__(
        self,
        client: Any,
        breakers: Mapping[str, Breaker],
        quotas: Mapping[str, Quota],
        *,
        clock: RedisClock | None = None,
        script_time: Callable[[], float] | None = None,
        record_keep: int | None = None,
        answer_keep: int | None = None,
        lease_grace: float = LEASE_GRACE_S,
        money: MoneyRules | None = None,
        table: Callable[[], RouteTable] = load_table,
        acks: ReplicaAcks | None = None,
    ) -> None:
        self.client = client
        self.breakers = breakers
        self.quotas = quotas
        self.clock = clock or RedisClock()
        self.script_time = script_time
        self.record_keep = record_keep if record_keep is not None else record_keep_s()
        self.answer_keep = answer_keep if answer_keep is not None else answer_keep_s()
        self.lease_grace = lease_grace
        self.money = money if money is not None else MoneyRules.from_settings()
        self.table = table
        self.configs = HopConfigs(
            breakers, quotas, self.money, (self.record_keep, self.answer_keep, lease_grace)
        )
        self._script = _SCRIPTS.for_client(client)["attempt"]
        self.acks = acks if acks is not None else ReplicaAcks.from_settings()
        if self.acks.on:
            expect_shortfalls(quotas, (BEGIN, FINISH))

    # -- ops ----------------------------------------------------------------------------------

    def route(self, header: Header, skips: Mapping[int, str] | None = None) -> Routed:
        """The request's first hop (or, for a request seen before, the one chosen then)."""

        def build(now: float) -> list[Any]:
            return self._header(ADVANCE, header, -1, now, skips)

        reply = self._run(build, None)
        assert isinstance(reply, Routed)
        return reply

    def begin(
        self,
        header: Header,
        position: int,
        *,
        owner: str,
        bound_s: float,
        abandoned_row: Callable[[float], str],
        skips: Mapping[int, str] | None = None,
    ) -> Call | Kept | Busy | Ended | Foreign:
        """Deliver one message of the attempt at ``position``: a :class:`Call` to make, or what
        an earlier delivery left (see the table). ``abandoned_row(start)`` is the ledger row to
        book if the call is abandoned (its estimate).

        Raises :class:`~aipool.errors.ReplicasBehind` holding the :class:`Call` when the
        acknowledgement is required and no replica held it in time: the record is ``calling``
        on the master, and the caller ends it (:meth:`finish`) without calling."""
        hop = header.chain[position]

        def build(now: float) -> list[Any]:
            return [
                *self._header(BEGIN, header, position, now, skips),
                owner,
                repr(float(bound_s)),
                abandoned_row(now),
            ]

        reply = self._run(build, hop.provider, self._acked(BEGIN, header, position))
        assert isinstance(reply, Call | Kept | Busy | Ended | Foreign)
        return reply

    def finish(
        self,
        header: Header,
        position: int,
        call: Call,
        *,
        owner: str,
        answered: bool,
        verdict: str,
        booked: int,
        answer: str,
        ledger_row: str,
        code: str = "",
        detail: tuple[str, ...] = (),
        cost: int = 0,
        skips: Mapping[int, str] | None = None,
        pause_s: float = 0.0,
        ends: bool = False,
        result: ResultWrite | None = None,
    ) -> Recorded | Ended | Missing | Foreign:
        """Record how the owner's call ended (see the table): ``verdict`` is what the breaker
        hears (``success``, ``failure``, or ``release`` when the failure proves nothing about
        the provider); ``booked`` the tokens charged (the real usage, the estimate of a call
        that may have been billed, or 0) and ``cost`` what they cost (micro-dollars);
        ``ledger_row`` the call's row (JSON). ``pause_s``: the provider asked to be left alone
        that long (a rate limit's retry delay): it is paused for the whole pool. ``ends``: the
        failure ends the chain (a refusal the route will not take elsewhere): the next hop is
        the terminal one. ``result``: the producer's result, written with an answer that is
        recorded (:class:`Recorded`, or :class:`Missing`: the answer is still the caller's) in
        the same step (:mod:`aipool.attempt.result_write`)."""
        hop = header.chain[position]

        def build(now: float) -> list[Any]:
            # The call is charged to the day and month it began in.
            began = self.configs.periods(call.now, hop.provider)[2]
            return [
                *self._header(FINISH, header, position, now, skips),
                owner,
                "answered" if answered else "failed",
                verdict,
                int(booked),
                answer,
                ledger_row,
                code,
                json.dumps(list(detail), ensure_ascii=False),
                int(cost),
                repr(float(pause_s)),
                "1" if ends else "0",
                "" if began == self.configs.periods(now, hop.provider)[2] else began,
                *result_args(result),
            ]

        reply = self._run(build, hop.provider, self._acked(FINISH, header, position))
        assert isinstance(reply, Recorded | Ended | Missing | Foreign)
        return reply

    def sweep(self, limit: int = 1000) -> int:
        """Abandon every attempt whose lease ended with no outcome; returns how many."""
        raw = self._script(
            keys=[LEASES_KEY, PENDING_KEY],
            args=[SWEEP, self._script_time(), limit],
        )
        count, _ = read_reply(raw)
        return int(count)

    def tell_clock(self) -> None:
        """Have Redis tell this process its time, once, when no script has yet: a fresh
        process's host clock may be far off, and a deadline is counted on Redis's clock."""
        if self.clock.told_yet:
            return
        if self.script_time is not None:
            self.clock.told(self.script_time())
        else:
            self.clock.ask(self.client)

    # -- plumbing -----------------------------------------------------------------------------

    def _header(
        self,
        op: str,
        header: Header,
        position: int,
        now: float,
        skips: Mapping[int, str] | None,
    ) -> list[Any]:
        return header_args(
            op,
            self.script_time() if self.script_time else None,
            header,
            position,
            self.configs.periods(now, header.chain[0].provider)[2],
            skips,
        )

    def _script_time(self) -> str:
        return repr(self.script_time()) if self.script_time else ""

    def _acked(self, op: str, header: Header, position: int) -> str | None:
        """``op`` when its write decides a paid call and replicas are asked to hold it: a hop
        that costs money or counts against a quota (a free, unlimited local model called twice
        costs nothing, and pays no ``WAIT``)."""
        if not self.acks.on:
            return None
        hop = header.chain[position]
        cost = header.costs[position] if position < len(header.costs) else 0
        paid = cost > 0 or not self.quotas[hop.provider].limits.unlimited
        return op if paid else None

    def _eval(
        self, keys: list[str], args: list[Any], provider: str | None, acked: str | None
    ) -> tuple[Any, ReplicasBehind | None]:
        """The script's raw reply; with ``acked``, after ``WAIT`` in the same round trip, and
        the shortfall that forbids the call, if any (the write stands either way)."""
        if acked is None:
            return self._script(keys=keys, args=args), None
        try:
            raw, _ = run_acknowledged(
                self.client,
                self._script,
                keys,
                args,
                self.acks,
                provider=provider or "",
                op=acked,
                stops=acked == BEGIN,
                wrote=changed_something,
            )
        except ReplicasBehind as behind:
            return behind.reply, behind
        return raw, None

    def _run(
        self,
        build: Callable[[float], list[Any]],
        provider: str | None,
        acked: str | None = None,
    ) -> Reply:
        """Ask the script (``build`` makes the arguments for the caller's estimate of the time),
        again when that estimate named other periods, and once more after writing the stored
        hop configuration the script found missing."""
        stale, written = 0, False
        while True:
            # An op reads the route table once per try (load_table checks the file each time).
            stored = self.configs.current(self.table())
            raw, behind = self._eval([stored.key], build(self.clock.now()), provider, acked)
            reply: Reply | Stale | ConfigMissing
            reply, events = read_reply(raw)
            self.clock.told(reply.now)
            if isinstance(reply, ConfigMissing):
                # Nothing was changed: write the configuration and ask again, once.
                if written:
                    raise RuntimeError(f"{stored.key} went missing again as soon as written")
                self.configs.load(self.client, stored)
                written = True
                continue
            if provider is not None:
                for old, new, failures, tripped_at in events:
                    self.breakers[provider].transitioned(
                        BreakerState(old), BreakerState(new), failures, reply.now, tripped_at
                    )
            # Only a call to make is stopped: a skip, a kept answer or a busy lease calls no one.
            if behind is not None and isinstance(reply, Call):
                raise ReplicasBehind(str(behind), reply)
            if not isinstance(reply, Stale):
                return reply
            stale += 1
            if stale == _CLOCK_TRIES:
                raise RuntimeError("Redis's time kept falling outside the periods asked for")


def new_owner() -> str:
    """A name for one delivery of a message: the owner of the call it may make."""
    return uuid.uuid4().hex
