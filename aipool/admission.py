"""One admitted call: the provider's breaker and quota said yes to one (request, attempt).

An :class:`Admission` is the whole life of one model call as the guards see it, and the one place
its outcome is recorded (pybreaker's ``calling()`` is the model)::

    with guards.admit(provider, request_id, attempt, tokens) as call:
        completion = provider.complete(...)
        call.answered(completion)

- Leaving the block after ``answered`` settles the quota reservation to the real tokens (keeping
  the answer beside it while the message can be redelivered) and reports success to the breaker.
- Leaving it with an exception hands the tokens back, keeps the call as one request (it reached
  the provider), and reports a failure to the breaker when the error says the provider is
  unhealthy, or frees the permit when it does not. The exception propagates.
- Recording never fails the call: when Redis cannot take the outcome, the answer still goes out,
  and the ledger row lets the quota restore and the sweep catch up.

``guards.admit`` itself raises :class:`~aipool.errors.HopSkipped` (breaker open, no quota, Redis
unreachable) or :class:`~aipool.errors.AttemptEnded` when an earlier delivery of the same message
already made this call: the call is never made twice for one attempt.
"""

from __future__ import annotations

import json
import logging
from types import TracebackType
from typing import Any

from aipool.breaker import Breaker
from aipool.breaker.state import Permit
from aipool.contract import Completion, ToolCall
from aipool.errors import as_provider_error
from aipool.quota import Quota
from aipool.quota.reservation import Reservation
from aipool.redis_lua import execute_loading

log = logging.getLogger("aipool.admission")


class Admission:
    """Permission to call one provider once, and the record of how that call ended.

    Built by the guards; an admission with no breaker and no quota (unguarded use) records
    nothing. ``recorded`` says whether Redis took the outcome.
    """

    def __init__(
        self,
        provider: str,
        *,
        breaker: Breaker | None = None,
        permit: Permit | None = None,
        quota: Quota | None = None,
        reservation: Reservation | None = None,
    ) -> None:
        self.provider = provider
        self.breaker = breaker
        self.permit = permit
        self.quota = quota
        self.reservation = reservation
        self.completion: Completion | None = None
        self.recorded = True

    def answered(self, completion: Completion) -> None:
        """The provider answered with ``completion``; it is charged when the block is left."""
        self.completion = completion

    def __enter__(self) -> Admission:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc is None and self.completion is not None:
                self._succeeded(self.completion)
            else:
                self._failed(exc)
        except Exception:
            # The call is over and its answer (or error) must reach the producer whatever Redis
            # does now. The ledger row of this attempt is what the quota restore rebuilds from.
            self.recorded = False
            log.warning(
                "outcome of %s call not recorded in Redis (request %s); the ledger keeps it",
                self.provider,
                self.reservation.request_id if self.reservation else "?",
                exc_info=True,
            )

    def _succeeded(self, completion: Completion) -> None:
        # A success while CLOSED with no failure counted changes nothing in the breaker.
        report = self.permit is not None and not self.permit.clean
        self._write("success", report, completion)

    def _failed(self, exc: BaseException | None) -> None:
        counts = exc is not None and as_provider_error(exc).counts_against_provider
        # A permit with no trial slot has nothing to free when the failure proves nothing.
        report = self.permit is not None and (counts or self.permit.trial)
        self._write("failure" if counts else "release", report)

    def _write(self, outcome: str, report: bool, completion: Completion | None = None) -> None:
        """The quota's and the breaker's share of the outcome, in one round trip."""
        quota, res, breaker, permit = self.quota, self.reservation, self.breaker, self.permit
        if breaker is None:
            return
        charging = quota is not None and res is not None and not res.unlimited
        reporting = report and permit is not None
        if not (charging or reporting):
            return

        def build(pipe: Any) -> float | None:
            if quota is not None and res is not None and charging:
                if completion is not None:
                    used = completion.input_tokens + completion.output_tokens
                    answer = json.dumps(completion.to_dict(), ensure_ascii=False)
                    quota.settle_in(pipe, res, used, answer)
                else:
                    quota.release_in(pipe, res, called=True)
            if reporting and permit is not None:
                return breaker.record_in(pipe, outcome, permit)
            return None

        replies, now = execute_loading(breaker.client, build)
        if now is not None:
            breaker.recorded(replies[-1], now)


def completion_from_json(data: str) -> Completion:
    """The completion an earlier delivery kept beside its settled reservation."""
    raw: dict[str, Any] = json.loads(data)
    return Completion(
        text=str(raw.get("text") or ""),
        model=str(raw.get("model") or ""),
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        tool_calls=[
            ToolCall(
                name=str(c["name"]), arguments=dict(c.get("arguments") or {}), id=c.get("id", "")
            )
            for c in raw.get("tool_calls") or []
        ],
        finish_reason=str(raw.get("finish_reason") or "stop"),
        latency_ms=float(raw.get("latency_ms") or 0.0),
    )
