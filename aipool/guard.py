"""The breaker and the quota of each provider, asked together before every model call.

Order matters: the breaker first (an open breaker must not consume quota), then the quota; a quota
refusal hands the breaker's permit back untouched (a half-open trial slot is freed, not spent).
Redis errors end here: a guard that cannot be read skips the hop (``GuardUnavailable``), so no
call is ever made unguarded and the request still moves on to its terminal answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from redis.exceptions import RedisError

from aipool.admission import Admission
from aipool.breaker import Breaker
from aipool.errors import AttemptEnded, CircuitOpen, GuardUnavailable, HopSkipped, QuotaExceeded
from aipool.quota import Quota
from aipool.redis_lua import LuaScripts, compose, source, text

#: Breaker and quota asked in one script: one round trip per admitted call instead of two.
_SCRIPTS = LuaScripts(
    "aipool",
    composed={
        "admit": compose(
            source("aipool", "admit"),
            acquire=source("aipool.breaker", "acquire"),
            reserve=source("aipool.quota", "reserve"),
        )
    },
)


class Passengers(Protocol):
    """Writes that ride in the guards' pipelines (the ledger's held records)."""

    def ride_in(self, pipe: Any) -> list[Any]: ...

    def missed(self, riders: list[Any]) -> None: ...


class SharedGuards:
    """:class:`~aipool.hop.Guards` backed by Redis: every worker of the pool sees the same state."""

    def __init__(
        self,
        breakers: Mapping[str, Breaker],
        quotas: Mapping[str, Quota],
        passengers: Passengers | None = None,
    ) -> None:
        self.breakers = breakers
        self.quotas = quotas
        self.passengers = passengers

    def blocked(self, provider: str, tokens: int) -> HopSkipped | None:
        breaker = self.breakers[provider]
        quota = self.quotas[provider]
        riding: list[Any] = []
        try:
            # The breaker's and the quota's reads in one round trip, carrying what the hop has
            # to write anyway (the ledger records of the hops it skipped or saw fail).
            pipe = breaker.client.pipeline(transaction=False)
            breaker.peek_in(pipe)
            quota.peek_in(pipe)
            riding = self.passengers.ride_in(pipe) if self.passengers else []
            replies = pipe.execute()
        except RedisError as exc:
            if self.passengers is not None:
                self.passengers.missed(riding)
            return GuardUnavailable(f"{provider} guards unreadable: {type(exc).__name__}")
        if riding:
            replies = replies[:-1]
        if breaker.is_open_from(replies[0]):
            return CircuitOpen(f"{provider} breaker is open")
        if not quota.has_room_from(replies[1:], tokens):
            return QuotaExceeded(f"{provider} quota has no room for {tokens} tokens")
        return None

    def admit(self, provider: str, request_id: str, attempt: int, tokens: int) -> Admission:
        """Acquire the breaker and reserve quota for one call of (``request_id``, ``attempt``),
        in one script.

        Raises :class:`HopSkipped` when the call may not be made now, and :class:`AttemptEnded`
        when an earlier delivery of this attempt already made it.
        """
        breaker = self.breakers[provider]
        quota = self.quotas[provider]
        try:
            reply = self._admit(breaker, quota, request_id, attempt, tokens)
        except RedisError as exc:
            raise GuardUnavailable(f"{provider} guards unreachable: {type(exc).__name__}") from exc
        return reply

    def _admit(
        self, breaker: Breaker, quota: Quota, request_id: str, attempt: int, tokens: int
    ) -> Admission:
        b_keys, b_args, token = breaker.acquire_call()
        q_call = quota.reserve_call(request_id, attempt, tokens)
        keys: list[Any] = [*b_keys, *(q_call.keys if q_call else ())]
        args: list[Any] = [*b_args, "1" if q_call else "0", *(q_call.args if q_call else ())]
        reply = list(_SCRIPTS.for_client(breaker.client)["admit"](keys=keys, args=args))
        permit = breaker.permit_from(reply[:6], token, float(b_args[0]))
        if q_call is None:
            reservation = quota.unlimited_reservation(request_id, attempt, tokens)
        else:
            # A refusal, or an attempt already made, freed the trial slot inside the script.
            reservation = quota.reservation_from([text(v) for v in reply[6:]], q_call)
            if reservation.state in ("settled", "released"):
                raise AttemptEnded(
                    f"{breaker.provider} was already called for this attempt ({reservation.state})",
                    answer=reservation.answer if reservation.state == "settled" else None,
                )
        return Admission(
            breaker.provider, breaker=breaker, permit=permit, quota=quota, reservation=reservation
        )
