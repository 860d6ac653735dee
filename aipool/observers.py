"""What happens after every hop besides answering: the usage ledger and the metrics.

Observers receive an :class:`~aipool.hop.AttemptEvent` and must be quick: the ledger is one Redis
LPUSH (a beat task drains it into the database), metrics are in-process counters.
"""

from __future__ import annotations

from datetime import UTC, datetime

from aipool.hop import AttemptEvent
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import UsageLog


def usage_record(event: AttemptEvent) -> UsageRecord:
    """The ledger row for one hop: tokens and cost only for a call that answered."""
    completion = event.completion
    return UsageRecord(
        request_id=event.request_id,
        attempt=event.position,
        provider=event.hop.provider,
        model=completion.model if completion else event.hop.model,
        outcome=event.attempt.outcome,
        success=event.attempt.outcome == "ok",
        input_tokens=completion.input_tokens if completion else 0,
        output_tokens=completion.output_tokens if completion else 0,
        latency_ms=round(event.attempt.latency_ms) if event.attempt.latency_ms else None,
        error_message=event.attempt.error,
        user_id=event.user_id,
        intent=event.route.intent,
        complexity=event.route.complexity,
        route_chain=" → ".join(str(hop) for hop in event.route.chain)[:400],
        route_reason=event.route.reason,
        fallback_position=event.position,
        cost_usd=event.cost_usd,
        created_at=datetime.fromtimestamp(event.at, UTC),
    )


class LedgerObserver:
    """Hands every hop to the usage ledger's Redis spool."""

    def __init__(self, usage_log: UsageLog) -> None:
        self.usage_log = usage_log

    def __call__(self, event: AttemptEvent) -> None:
        self.usage_log.record(usage_record(event))
