"""Reading back what the pool accounted: the usage spool, the ledger and the quota counters.

The questions a fault-injection test asks after the dust settles: did every attempt reach the
ledger exactly once, did anything land in the dead-letter list, and do the quota counters in Redis
say what the ledger says.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, create_engine, select

from aipool.attempt.layout import LEASES_KEY
from aipool.contract.vocabulary import CALLED_OUTCOMES
from aipool.ledger.models import UsageLogRow
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import DEAD_KEY, PENDING_KEY, DrainResult, drain
from aipool.periods import day_of, month_of, pool_zone
from aipool.quota import quotas_for
from aipool.quota.storage import QuotaStore

#: Providers whose quota is counted by default (ADR-006 limits); the others are unlimited.
LIMITED_PROVIDERS = ("gemini", "claude")


def spooled(client: Any) -> list[UsageRecord]:
    """Usage records waiting in Redis for the ledger, oldest first."""
    return [UsageRecord.from_json(raw) for raw in reversed(client.lrange(PENDING_KEY, 0, -1))]


def dead_letters(client: Any) -> int:
    """How many usage records were moved to the dead-letter list."""
    return int(client.llen(DEAD_KEY))


def drain_everything(client: Any, engine: Engine, timeout: float = 30.0) -> DrainResult:
    """Drain the spool into the ledger until it is empty; the totals of every drain call."""
    total = DrainResult()
    deadline = time.monotonic() + timeout
    while True:
        step = drain(client, engine)
        total.written += step.written
        total.duplicates += step.duplicates
        total.dead += step.dead
        total.pending = step.pending
        total.error = step.error or total.error
        if step.pending == 0 and not step.skipped and step.error is None:
            return total
        if time.monotonic() > deadline:
            raise TimeoutError(f"ledger spool not drained: {step}")
        time.sleep(0.2)


def ledger_rows(engine: Engine, request_ids: Iterable[str]) -> list[UsageLogRow]:
    """The ledger rows of ``request_ids``, by request and attempt."""
    ids = sorted(set(request_ids))
    if not ids:
        return []
    with engine.connect() as conn:
        result = conn.execute(
            select(UsageLogRow)
            .where(UsageLogRow.request_id.in_(ids))
            .order_by(UsageLogRow.request_id, UsageLogRow.attempt)
        )
        return list(result.all())  # type: ignore[arg-type]


def drained_rows(client: Any, ledger_url: str, request_ids: Iterable[str]) -> list[UsageLogRow]:
    """The ledger rows of ``request_ids`` once every spooled record reached the ledger (what beat
    does every 5 s), read through an engine of their own."""
    engine = create_engine(ledger_url)
    try:
        drain_everything(client, engine)
        return ledger_rows(engine, request_ids)
    finally:
        engine.dispose()


def trail(answer: dict[str, Any]) -> list[tuple[str, str]]:
    """``(provider, outcome)`` of every attempt an answer lists, in order."""
    return [(a["provider"], a["outcome"]) for a in answer.get("attempts", [])]


def rows_trail(rows: Iterable[UsageLogRow], request_id: str) -> list[tuple[str, str]]:
    """``(provider, outcome)`` of the ledger rows of one request, by attempt."""
    mine = sorted((r for r in rows if r.request_id == request_id), key=lambda r: r.attempt)
    return [(r.provider, r.outcome) for r in mine]


@dataclass(frozen=True)
class Charge:
    """Requests and tokens charged to one provider."""

    requests: int
    tokens: int


def ledger_charges(rows: Iterable[UsageLogRow]) -> dict[str, Charge]:
    """What the ledger says each provider was charged: calls that reached it, their tokens."""
    requests: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for row in rows:
        if row.outcome in CALLED_OUTCOMES:
            requests[row.provider] += 1
            tokens[row.provider] += row.input_tokens + row.output_tokens
    return {p: Charge(requests[p], tokens[p]) for p in LIMITED_PROVIDERS}


def quota_charges(client: Any) -> dict[str, Charge]:
    """What the quota counters in Redis say each limited provider was charged today."""
    quotas = quotas_for(client)
    charges = {}
    for provider in LIMITED_PROVIDERS:
        usage = quotas[provider].usage()
        charges[provider] = Charge(
            int(usage["daily_requests"]["used"] or 0), int(usage["daily_tokens"]["used"] or 0)
        )
    return charges


def open_leases(client: Any) -> int:
    """Calls whose outcome is not known yet: leases neither ended by an outcome nor abandoned."""
    return int(client.zcard(LEASES_KEY))


@dataclass(frozen=True)
class Bar:
    """One provider's three counts of the calls made to it, which must be equal.

    ``calls``: requests that reached the provider's (simulated) server, faulted or not;
    ``rows``: ledger rows of that provider whose outcome is a call (``CALLED_OUTCOMES``: ok, error,
    abandoned), every row counted, none merged; ``quota``: the requests the provider's quota
    counted today in Redis.
    """

    calls: int
    rows: int
    quota: int

    @property
    def level(self) -> bool:
        """Whether the three counts agree."""
        return self.calls == self.rows == self.quota


def called_rows(rows: Iterable[UsageLogRow], provider: str) -> int:
    """Ledger rows recording a call to ``provider`` (ok, error, abandoned): each row counts."""
    return sum(1 for r in rows if r.provider == provider and r.outcome in CALLED_OUTCOMES)


def counted_requests(client: Any, provider: str) -> int:
    """Requests ``provider``'s quota counted today (the pool's day, on Redis's clock), read from
    the counters whatever the provider's limits: a provider with no limit at all has none (0)."""
    seconds, micros = client.time()
    now = float(seconds) + micros / 1e6
    zone = pool_zone()
    store = QuotaStore(client, provider)
    return store.read(now, day_of(now, zone).label, month_of(now, zone).label).day_requests
