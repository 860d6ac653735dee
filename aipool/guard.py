"""The breaker and the quota of each provider, asked together before every model call.

Order matters: the breaker first (an open breaker must not consume quota), then the quota; a quota
refusal hands the breaker's permit back untouched (a half-open trial slot is freed, not spent).
Redis errors end here: a guard that cannot be read skips the hop (``GuardUnavailable``), so no
call is ever made unguarded and the request still moves on to its terminal answer.
"""

from __future__ import annotations

from collections.abc import Mapping

from redis.exceptions import RedisError

from aipool.admission import Admission
from aipool.breaker import Breaker
from aipool.errors import AttemptEnded, CircuitOpen, GuardUnavailable, HopSkipped, QuotaExceeded
from aipool.quota import Quota


class SharedGuards:
    """:class:`~aipool.hop.Guards` backed by Redis: every worker of the pool sees the same state."""

    def __init__(self, breakers: Mapping[str, Breaker], quotas: Mapping[str, Quota]) -> None:
        self.breakers = breakers
        self.quotas = quotas

    def blocked(self, provider: str, tokens: int) -> HopSkipped | None:
        try:
            if self.breakers[provider].is_open():
                return CircuitOpen(f"{provider} breaker is open")
            if not self.quotas[provider].has_room(tokens):
                return QuotaExceeded(f"{provider} quota has no room for {tokens} tokens")
        except RedisError as exc:
            return GuardUnavailable(f"{provider} guards unreadable: {type(exc).__name__}")
        return None

    def admit(self, provider: str, request_id: str, attempt: int, tokens: int) -> Admission:
        """Acquire the breaker and reserve quota for one call of (``request_id``, ``attempt``).

        Raises :class:`HopSkipped` when the call may not be made now, and :class:`AttemptEnded`
        when an earlier delivery of this attempt already made it.
        """
        breaker = self.breakers[provider]
        quota = self.quotas[provider]
        try:
            permit = breaker.acquire()
            try:
                reservation = quota.reserve(request_id, attempt, tokens)
            except QuotaExceeded:
                breaker.release(permit)
                raise
            if reservation.state in ("settled", "released"):
                breaker.release(permit)
                raise AttemptEnded(
                    f"{provider} was already called for this attempt ({reservation.state})",
                    answer=reservation.answer if reservation.state == "settled" else None,
                )
        except RedisError as exc:
            raise GuardUnavailable(f"{provider} guards unreachable: {type(exc).__name__}") from exc
        return Admission(
            provider, breaker=breaker, permit=permit, quota=quota, reservation=reservation
        )
