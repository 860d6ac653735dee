"""Prometheus counter of deciding writes no replica acknowledged in time
(:mod:`aipool.redis.durability`).

``aipool_replica_ack_shortfalls_total{provider, op}`` counts each ``begin`` or ``finish`` of a paid
call that fewer replicas than ``AIPOOL_REDIS_REPLICA_ACKS`` held within
``AIPOOL_REDIS_REPLICA_ACK_TIMEOUT``: with ``AIPOOL_REDIS_REPLICA_ACK_REQUIRED=1`` a ``begin`` so
counted made no call (the hop's outcome is ``replicas_behind``); without it, the call was made on
a record a failover could lose. Labels are bounded: a provider of the route table and an op.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import Counter

SHORTFALLS = Counter(
    "aipool_replica_ack_shortfalls",
    "Writes deciding a paid call (op: begin, finish) that fewer replicas than asked acknowledged "
    "in time, by provider.",
    ["provider", "op"],
)


def count_shortfall(provider: str, op: str) -> None:
    """Count one write of ``op`` at ``provider`` no replica (or too few) acknowledged."""
    SHORTFALLS.labels(provider or "none", op or "none").inc()


def expect_shortfalls(providers: Iterable[str], ops: Iterable[str]) -> None:
    """Export 0 for each provider and op before any shortfall: an alert's ``rate()`` then sees
    the first one (a series that appears at 1 has no increase to show)."""
    for provider in providers:
        for op in ops:
            SHORTFALLS.labels(provider, op)
