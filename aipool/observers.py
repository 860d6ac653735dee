"""What happens after every hop besides answering: the usage ledger and the metrics.

Observers receive an :class:`~aipool.attempt.event.AttemptEvent` and must be quick: the ledger is
one Redis LPUSH (a beat task drains it into the database), metrics are in-process counters. A
call's own row is booked by the attempt's script, atomically with its charge; the observer books
the rows of hops that made no call (skips, terminal answers).
"""

from __future__ import annotations

from datetime import UTC, datetime

from aipool.attempt.event import AttemptEvent
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import UsageLog, storable
from aipool.tracing import current_trace_id


def usage_record(event: AttemptEvent) -> UsageRecord:
    """The ledger row for one hop: tokens and cost only for a call that was charged."""
    completion = event.completion
    return UsageRecord(
        request_id=event.request_id,
        journey_id=event.journey_id,
        attempt=event.position,
        call_id=event.call_id,
        provider=event.hop.provider,
        model=completion.model if completion else event.hop.model,
        outcome=event.attempt.outcome,
        success=event.attempt.outcome == "ok",
        input_tokens=event.input_tokens,
        output_tokens=event.output_tokens,
        latency_ms=round(event.attempt.latency_ms) if event.attempt.latency_ms else None,
        error_message=event.attempt.error,
        user_id=event.user_id,
        intent=event.route.intent,
        complexity=event.route.complexity,
        route_chain=" → ".join(str(hop) for hop in event.route.chain)[:400],
        route_reason=event.route.reason,
        fallback_position=event.position,
        cost_usd=event.cost_usd,
        estimated=event.estimated,
        service=event.route.service,
        saved_usd=event.saved_usd,
        trace_id=current_trace_id(),
        # A call belongs to the day it started: the day its quota was charged to.
        created_at=datetime.fromtimestamp(event.at, UTC),
    )


def usage_row(event: AttemptEvent) -> UsageRecord:
    """:func:`usage_record`, cleaned as every store takes it (the script books it as is)."""
    return storable(usage_record(event))


class LedgerObserver:
    """Hands every hop the attempt's script did not book to the usage ledger's Redis spool."""

    def __init__(self, usage_log: UsageLog) -> None:
        self.usage_log = usage_log

    def __call__(self, event: AttemptEvent) -> None:
        if not event.booked:
            self.usage_log.record(usage_record(event))
