"""The breaker and the quota of each provider, asked together before every model call.

Order matters: the breaker first (an open breaker must not consume quota), then the quota; a quota
refusal hands the breaker's permit back untouched (a half-open trial slot is freed, not spent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aipool.breaker import Breaker
from aipool.breaker.state import Permit
from aipool.contract import Completion
from aipool.errors import CircuitOpen, HopSkipped, ProviderError, QuotaExceeded
from aipool.quota import Quota
from aipool.quota.reservation import Reservation


@dataclass
class Ticket:
    """One admitted call: a breaker permit and a quota reservation, settled by the call's outcome."""

    breaker: Breaker
    permit: Permit
    quota: Quota
    reservation: Reservation

    def succeeded(self, completion: Completion) -> None:
        self.quota.settle(self.reservation, completion.input_tokens + completion.output_tokens)
        self.breaker.record_success(self.permit)

    def failed(self, error: ProviderError) -> None:
        # The call reached the provider: it stays a request for RPM and daily counts, its tokens
        # come back. Only failures that say the provider is unhealthy move the breaker.
        self.quota.release(self.reservation, called=True)
        if error.counts_against_provider:
            self.breaker.record_failure(self.permit)
        else:
            self.breaker.release(self.permit)


class SharedGuards:
    """:class:`~aipool.hop.Guards` backed by Redis: every worker of the pool sees the same state."""

    def __init__(self, breakers: Mapping[str, Breaker], quotas: Mapping[str, Quota]) -> None:
        self.breakers = breakers
        self.quotas = quotas

    def blocked(self, provider: str, tokens: int) -> HopSkipped | None:
        breaker = self.breakers[provider]
        if breaker.is_open():
            return CircuitOpen(f"{provider} breaker is open")
        if not self.quotas[provider].has_room(tokens):
            return QuotaExceeded(f"{provider} quota has no room for {tokens} tokens")
        return None

    def admit(self, provider: str, request_id: str, attempt: int, tokens: int) -> Ticket:
        breaker = self.breakers[provider]
        quota = self.quotas[provider]
        permit = breaker.acquire()
        try:
            reservation = quota.reserve(request_id, attempt, tokens)
        except QuotaExceeded:
            breaker.release(permit)
            raise
        return Ticket(breaker, permit, quota, reservation)
