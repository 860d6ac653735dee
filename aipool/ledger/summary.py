"""What happened to each provider's hops over a period, read from the ledger's raw rows.

The ledger keeps one row per hop, and a hop either **called** the provider (``ok`` or ``error``),
was **skipped** without calling it (its breaker open, its quota spent, the request's deadline
passed), or was the chain's terminal answer (the static answer or the refusal). Counting all of
them as "requests" mixes what a provider did with what it was spared; this summary keeps them
apart, in the words ``aipool report``, ``aipool status`` and the demo share (:mod:`aipool.views.usage_words`).
Latency percentiles are over calls (a skip has no latency), linear like PostgreSQL's
``percentile_cont``.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, tzinfo
from decimal import Decimal
from typing import Any

from sqlalchemy import Engine, func, select

from aipool.contract.vocabulary import CACHED_OUTCOMES, TERMINAL_OUTCOMES, outcome_named
from aipool.ledger.models import UsageLogRow
from aipool.periods import day_range, month_range, pool_zone

_REASON = re.compile(r"^([a-z_]+):")


@dataclass
class ProviderSummary:
    """One provider's hops over a period."""

    provider: str
    calls: int = 0
    ok: int = 0
    #: Failed calls by their failure code (``timeout``, ``unreachable``, ...).
    failures: dict[str, int] = field(default_factory=dict)
    #: Hops passed over without a call, by their outcome (``circuit_open``, ``deadline``, ...).
    skipped: dict[str, int] = field(default_factory=dict)
    answered: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    p50_ms: float | None = None
    p95_ms: float | None = None
    #: Requests the response cache answered with this provider's earlier answer ($0 each).
    cached: int = 0
    #: What those answers cost when the provider gave them: what the cache saved.
    saved_usd: Decimal = Decimal(0)

    @property
    def failed(self) -> int:
        """Calls that failed, whatever the reason."""
        return sum(self.failures.values())

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, Any]:
        """Every count as JSON: amounts as strings, exact, and ``failed`` beside its reasons."""
        return {
            **asdict(self),
            "failed": self.failed,
            "cost_usd": str(self.cost_usd),
            "saved_usd": str(self.saved_usd),
        }


def failure_reason(error_message: str | None) -> str:
    """The failure code a failed hop's message starts with (``unreachable: ...``), else
    ``provider_error`` (a call that failed for no named reason)."""
    match = _REASON.match(error_message or "")
    return match.group(1) if match else "provider_error"


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) with linear interpolation, ``None`` without values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1]


def summarize(engine: Engine, start: datetime, end: datetime) -> list[ProviderSummary]:
    """Per provider, the hops created in UTC ``[start, end)``, ordered by provider."""
    t = UsageLogRow
    in_range = (t.created_at >= start, t.created_at < end)
    summaries: dict[str, ProviderSummary] = {}
    latencies: dict[str, list[float]] = defaultdict(list)
    with engine.connect() as conn:
        grouped = conn.execute(
            select(
                t.provider,
                t.outcome,
                t.error_message,
                func.count(),
                func.coalesce(func.sum(t.input_tokens), 0),
                func.coalesce(func.sum(t.output_tokens), 0),
                func.coalesce(func.sum(t.cost_usd), 0),
                func.coalesce(func.sum(t.saved_usd), 0),
            )
            .where(*in_range)
            .group_by(t.provider, t.outcome, t.error_message)
        )
        for provider, outcome, error, count, tokens_in, tokens_out, cost, saved in grouped:
            s = summaries.setdefault(provider, ProviderSummary(provider))
            _count(s, outcome, error, int(count))
            s.input_tokens += int(tokens_in)
            s.output_tokens += int(tokens_out)
            s.cost_usd += Decimal(cost)
            s.saved_usd += Decimal(saved)
        for provider, latency in conn.execute(
            select(t.provider, t.latency_ms).where(
                *in_range, t.outcome.in_(("ok", "error")), t.latency_ms.is_not(None)
            )
        ):
            latencies[provider].append(float(latency or 0))
    for provider, values in latencies.items():
        values.sort()
        summaries[provider].p50_ms = percentile(values, 0.50)
        summaries[provider].p95_ms = percentile(values, 0.95)
    for s in summaries.values():
        s.cost_usd = s.cost_usd.quantize(Decimal("0.000001"))
        s.saved_usd = s.saved_usd.quantize(Decimal("0.000001"))
    return [summaries[p] for p in sorted(summaries)]


def _count(s: ProviderSummary, outcome: str, error: str | None, count: int) -> None:
    if outcome == "ok":
        s.calls += count
        s.ok += count
        s.answered += count
    elif outcome == "error":
        s.calls += count
        reason = failure_reason(error)
        s.failures[reason] = s.failures.get(reason, 0) + count
    elif outcome == "abandoned":
        # A call whose worker stopped before it ended: made, and failed as far as anyone knows.
        s.calls += count
        s.failures["abandoned"] = s.failures.get("abandoned", 0) + count
    elif outcome in TERMINAL_OUTCOMES:
        s.answered += count
    elif outcome in CACHED_OUTCOMES:
        s.cached += count
        s.answered += count
    else:
        # Counted by its outcome; the views give each its word (aipool.contract.vocabulary).
        named = outcome_named(outcome) or "skipped"
        s.skipped[named] = s.skipped.get(named, 0) + count


def summarize_day(
    engine: Engine, day: date, tz: tzinfo | str | None = None
) -> list[ProviderSummary]:
    """:func:`summarize` over the local calendar ``day`` (``AIPOOL_TIMEZONE`` by default)."""
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    return summarize(engine, *day_range(day, zone))


def summarize_month_to(
    engine: Engine, day: date, tz: tzinfo | str | None = None
) -> list[ProviderSummary]:
    """:func:`summarize` from the first of ``day``'s month to the end of ``day``."""
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    start, _ = month_range(day, zone)
    return summarize(engine, start, day_range(day, zone)[1])
