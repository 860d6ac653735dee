"""The call at one hop: its bound, the provider's answer or error, and how each is recorded.

The call is made within a wall-clock bound (:mod:`aipool.attempt.bound`) no longer than the
provider's timeout, its share of the request's deadline or what is left before the request's
message expires; an error is classified (does it count against the provider, was it billed, did
the provider ask for a pause) before ``finish`` records it.
"""

from __future__ import annotations

import logging
import time

from redis.exceptions import RedisError

from aipool.attempt import result_write
from aipool.attempt.bound import within
from aipool.attempt.forwarding import REPLICAS_BEHIND, HopForwarding
from aipool.attempt.kept_answer import completion_to_json
from aipool.attempt.layout import Call, Decision, Ended, Foreign, Missing, Recorded
from aipool.attempt.timing import recent_median, record_latency, share
from aipool.attempt.visit import Done, Forward, Visit, expired_words
from aipool.contract.completion import Completion
from aipool.contract.journey import Attempt
from aipool.errors import (
    DeadlineCut,
    ModelRefused,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ReplicasBehind,
    UnusableAnswer,
    as_provider_error,
)
from aipool.quotes import without_quotes
from aipool.scrub import scrub
from aipool.settings import settings

log = logging.getLogger("aipool.hop")


class HopCall(HopForwarding):
    """Makes a hop's call and records how it ended."""

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
        try:
            # A fresh process's host clock may be far off: 5 s ahead made a 5 s deadline look
            # spent, and the call was begun (and charged) with 0 s to answer (#42's model test).
            self.book.tell_clock()
        except RedisError:
            log.debug("Redis's time unknown for request_id=%s", visit.request_id, exc_info=True)
        left = deadline - visit.journey.elapsed_s(self.now())
        return share(left, later, lambda provider: recent_median(self.book.client, provider))

    def expired(self, at: float | None) -> bool:
        """Whether a message's expiry ``at`` (epoch seconds) has passed, on the pool's clock: a
        fresh process asks Redis its time first, as its host clock may be far off (issue #42)."""
        if at is None:
            return False
        try:
            self.book.tell_clock()
        except RedisError:
            log.debug("expiry read on this host's clock: Redis did not tell the time")
        return self.now() >= at

    def _bound(self, visit: Visit, position: int, timeout: float) -> float:
        """The bound a hop asks ``begin`` for: the provider's ``timeout``, cut at the call's
        share of the deadline and at the message's expiry, on this process's estimate of the
        pool's clock; ``begin`` cuts it at the deadline itself, on Redis's."""
        return min(timeout, self._share(visit, position), self._until_expiry(visit))

    def _until_expiry(self, visit: Visit) -> float:
        """How long until the request's message expires, on the pool's clock (as
        :meth:`expired` reads it); unbounded without an expiry. The call is cut there: past it,
        the producer has given up."""
        if visit.expires_at is None:
            return float("inf")
        return max(0.0, visit.expires_at - self.now())

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
        event = self._answer_event(visit, position, completion, call.now, call_id=owner)
        # The producer's result is made before finish, which may write it with the answer.
        done = self._answered(visit, position, completion, call.now, event=event)
        write = result_write.prepare(visit.request_id, done.result)
        reply: Recorded | Ended | Missing | Foreign | None = None
        try:
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
                result=write,
            )
        finally:
            if write is not None:
                result_write.settled(write, isinstance(reply, Recorded | Missing))
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
        return done

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
        # A timeout that only the request's deadline or its message's expiry made short (the
        # deadline itself, the share of it the later providers leave this one, or the expiry)
        # says nothing about the provider. One the provider answered with a status (408, 504) is
        # its own time running out: it counts.
        short = (
            isinstance(error, ProviderTimeout)
            and error.status is None
            and call.limit_s < bound - 1e-6
        )
        # Without a deadline only the expiry cuts a call short. Once the expiry has passed, no
        # provider after this one is called either: finish passes them over (the skips), and the
        # chain's end answers, as at a later hop's start.
        if visit.expires_at is not None and (
            (short and visit.request.deadline_s is None) or self.expired(visit.expires_at)
        ):
            visit.expire()
        if short:
            cut = f"cut at {call.limit_s:.3g} s"
            error = DeadlineCut(
                f"{cut}: {expired_words('during the call')}"
                if visit.expired
                else f"{cut} of the request's deadline"
            )
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
        # The code before it is the pool's own word, never the prompt's, and what reports count
        # the failure under (aipool.ledger.summary.failure_reason): a prompt that names it (an
        # alert pasted with "server_error: ...") must not cut it.
        said = without_quotes(scrub(str(error)) or "", visit.request.text())
        message = f"{error.code}: {said}" if said else error.code
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
        return self._move_on(visit, position, reply)

    def _move_on(
        self, visit: Visit, position: int, reply: Recorded | Ended | Missing | Foreign | None
    ) -> Forward:
        """After a call that brought no answer: where ``finish`` chose to go next, or, when the
        record is gone (Redis restarted empty) or unreachable, the next provider of the chain,
        whose own admission decides whether it may call."""
        if isinstance(reply, Ended):
            return self._follow(visit, reply.decision, reply.now)
        chain = visit.journey.route.chain
        later = (hop.provider for hop in chain[position + 1 :] if not hop.terminal)
        return self._follow(visit, Decision(next(later, chain[-1].provider)), self.now())

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
        return self._move_on(visit, position, reply)


def rate_limit_pause(error: ProviderError) -> float:
    """How long the pool leaves a provider alone after ``error``: the delay a rate-limited
    provider declared, at most ``AIPOOL_RATE_LIMIT_PAUSE_MAX_S``; 0 for any other error."""
    if not isinstance(error, ProviderRateLimited) or not error.retry_after:
        return 0.0
    return min(error.retry_after, settings().rate_limit_pause_max_s)
