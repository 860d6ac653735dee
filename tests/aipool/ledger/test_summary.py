"""The ledger summary keeps calls, failures by reason, skips and answers apart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from aipool.ledger.db import make_engine, migrate
from aipool.ledger.record import UsageRecord
from aipool.ledger.summary import failure_reason, percentile, summarize
from aipool.ledger.usage_log import store_now


def _rec(i: int, provider: str, outcome: str, **kw: object) -> UsageRecord:
    return UsageRecord(
        request_id=f"r{i}",
        attempt=0,
        provider=provider,
        model="m",
        outcome=outcome,
        success=outcome == "ok",
        **kw,  # type: ignore[arg-type]
    )


def test_calls_failures_skips_and_answers_are_counted_apart(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.db'}"
    migrate(url)
    engine = make_engine(url)
    rows = [
        _rec(
            1,
            "gemini",
            "ok",
            input_tokens=3,
            output_tokens=2,
            latency_ms=10,
            cost_usd=Decimal("0.5"),
        ),
        _rec(2, "gemini", "ok", latency_ms=30, cost_usd=Decimal("0.25")),
        _rec(3, "gemini", "error", error_message="rate_limited: 429 slow down", latency_ms=5),
        _rec(4, "gemini", "error", error_message="unreachable: refused", latency_ms=1),
        _rec(5, "gemini", "quota_exceeded", error_message="gemini quota exceeded: rpm"),
        _rec(6, "gemini", "circuit_open", error_message="gemini circuit open"),
        _rec(7, "gemini", "deadline", error_message="deadline of 1s passed"),
        _rec(8, "static", "fallback"),
    ]
    for row in rows:
        store_now(engine, row)
    now = datetime.now(UTC)
    by = {
        s.provider: s for s in summarize(engine, now - timedelta(hours=1), now + timedelta(hours=1))
    }
    gemini = by["gemini"]
    assert (gemini.calls, gemini.ok, gemini.failed, gemini.answered) == (4, 2, 2, 2)
    assert gemini.failures == {"rate_limited": 1, "unreachable": 1}
    assert gemini.skipped == {"quota_exceeded": 1, "circuit_open": 1, "deadline": 1}
    assert gemini.tokens == 5 and gemini.cost_usd == Decimal("0.75")
    assert gemini.p50_ms == 7.5 and gemini.p95_ms == 27.0
    assert by["static"].answered == 1 and by["static"].calls == 0


def test_failure_reason_is_the_code_before_the_colon():
    assert failure_reason("timeout: no answer in 3 s") == "timeout"
    assert failure_reason("something odd") == "provider_error"
    assert failure_reason(None) == "provider_error"


def test_percentile_matches_percentile_cont():
    assert percentile([], 0.95) is None
    assert percentile([4.0], 0.95) == 4.0
    assert percentile([float(v) for v in range(1, 11)], 0.95) == 9.55
