"""After the call, or instead of it: where the request goes next, or its answer.

An attempt that ended without an answer (now or on an earlier delivery) moves the request on to the
hop the lifecycle decided, the hops it passed over recorded with their reason; Redis out of reach
sends it to the chain's end; a terminal hop (static answer or refusal) is answered in place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from aipool import lanes
from aipool.attempt.event import AttemptEvent
from aipool.attempt.layout import Decision, Ended, Passed
from aipool.attempt.records import HopRecords
from aipool.attempt.visit import DEADLINE, Done, Forward, Visit, expired_words
from aipool.backlog import QUEUE_WAIT
from aipool.breaker import BreakerState
from aipool.contract import result
from aipool.contract.completion import Completion
from aipool.contract.vocabulary import Outcome, outcome_named
from aipool.providers.base import Provider
from aipool.routing.windows import CONTEXT_TOO_LONG, skip_reason

log = logging.getLogger("aipool.hop")

#: What each money rule's skip says (``what`` is the limit that held: aipool.attempt.money).
_MONEY_SKIPS = {
    "budget_exhausted": "{provider}: the pool's cap on paid spend this month is reached",
    "service_budget_exhausted": "{provider}: the request's service has used its {what}",
    "budget_saving": "{provider}: saving the rest of the {what} for higher-priority work",
}
#: The outcome of a paid call not made because no replica acknowledged its record in time.
REPLICAS_BEHIND: Outcome = "replicas_behind"


class HopForwarding(HopRecords):
    """Forwards a request after its hop, or answers it."""

    providers: Callable[[str], Provider]

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
            event = self._answer_event(visit, position, completion, at, replayed=replayed)
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
        if passed.code == DEADLINE and (visit.expired or visit.request.deadline_s is None):
            return expired_words("before this hop")
        if passed.code == DEADLINE:
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
