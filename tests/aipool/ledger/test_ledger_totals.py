"""totals() and restore_quotas(): quota counters rebuilt from the ledger."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from sqlalchemy import Engine

from aipool.ledger.models import usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.totals import restore_quotas, totals
from aipool.ledger.usage_log import _row

TAIPEI = ZoneInfo("Asia/Taipei")


def _rec(rid: str, provider: str, at: datetime, tokens: int, outcome: str = "ok") -> UsageRecord:
    return UsageRecord(
        rid,
        0,
        provider,
        "m",
        outcome,
        outcome == "ok",
        input_tokens=tokens,
        output_tokens=tokens // 2,
        cost_usd=Decimal(0),
        created_at=at,
    )


def _seed(engine: Engine) -> None:
    rows = [
        # Earlier this month, in Taipei (the UTC date is still the previous day for the first)
        _rec("a", "gemini", datetime(2026, 3, 1, 0, 30, tzinfo=TAIPEI), 1000),
        _rec("b", "gemini", datetime(2026, 3, 10, 12, tzinfo=TAIPEI), 2000),
        # Today
        _rec("c", "gemini", datetime(2026, 3, 14, 0, 0, tzinfo=TAIPEI), 300),
        _rec("d", "gemini", datetime(2026, 3, 14, 23, 59, 59, tzinfo=TAIPEI), 100, "error"),
        # Never reached gemini: not counted
        _rec("e", "gemini", datetime(2026, 3, 14, 9, tzinfo=TAIPEI), 0, "circuit_open"),
        _rec("e2", "gemini", datetime(2026, 3, 14, 9, tzinfo=TAIPEI), 0, "deadline"),
        # Last month, another provider, tomorrow
        _rec("f", "gemini", datetime(2026, 2, 28, 23, 59, tzinfo=TAIPEI), 5000),
        _rec("g", "claude", datetime(2026, 3, 14, 9, tzinfo=TAIPEI), 400),
        _rec("h", "gemini", datetime(2026, 3, 15, 0, 0, tzinfo=TAIPEI), 700),
    ]
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), [_row(r) for r in rows])


def test_given_a_month_of_calls_when_totalled_then_local_day_and_month(engine: Engine) -> None:
    # Given
    _seed(engine)
    # When
    day_requests, day_tokens, month_tokens = totals(
        engine, "gemini", date(2026, 3, 14), date(2026, 3, 1), TAIPEI
    )
    # Then: today = c + d; month = a + b + c + d + h (h is March 15)
    assert day_requests == 2
    assert day_tokens == 450 + 150
    assert month_tokens == 1500 + 3000 + 450 + 150 + 1050


class _FakeQuota:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int]] = []

    def restore(self, day_requests: int, day_tokens: int, month_tokens: int) -> None:
        self.calls.append((day_requests, day_tokens, month_tokens))


def test_given_quotas_that_lost_state_when_restored_then_each_gets_ledger_totals(
    engine: Engine,
) -> None:
    # Given
    _seed(engine)
    gemini, claude, ollama = _FakeQuota(), _FakeQuota(), _FakeQuota()
    now = datetime(2026, 3, 14, 23, 59, 59, tzinfo=TAIPEI)
    # When
    given = restore_quotas(
        engine, {"gemini": gemini, "claude": claude, "ollama": ollama}, now, "Asia/Taipei"
    )
    # Then
    assert gemini.calls == [(2, 600, 6150)]
    assert claude.calls == [(1, 600, 600)]
    assert ollama.calls == [(0, 0, 0)]
    assert given["gemini"] == (2, 600, 6150)
