"""The daily budget report: per provider, the day and the month to date."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from rich.console import Console
from sqlalchemy import Engine

from aipool.budget import build_report, render_report, report_notification
from aipool.ledger.models import usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import _row

TAIPEI = ZoneInfo("Asia/Taipei")


def test_given_a_month_of_usage_when_reported_then_day_and_month_per_provider(
    engine: Engine,
) -> None:
    # Given
    def rec(rid: str, provider: str, at: datetime, ok: bool = True, pos: int = 0) -> UsageRecord:
        return UsageRecord(
            rid, 0, provider, "m", "ok" if ok else "error", ok,
            input_tokens=1000, output_tokens=500, latency_ms=200 if ok else 2000,
            fallback_position=pos, cost_usd=Decimal("0.0015") if provider == "gemini" else Decimal(0),
            created_at=at,
        )  # fmt: skip

    day = datetime(2026, 3, 14, 12, tzinfo=TAIPEI)
    skip = UsageRecord(
        "f", 0, "claude", "m", "circuit_open", False, error_message="claude breaker is open",
        created_at=day,
    )  # fmt: skip
    rows = [
        rec("a", "ollama", day),
        rec("b", "ollama", day, ok=False),
        rec("c", "gemini", day, pos=1),
        rec("d", "gemini", datetime(2026, 3, 2, 12, tzinfo=TAIPEI)),
        rec("e", "gemini", datetime(2026, 3, 15, 0, 0, tzinfo=TAIPEI)),  # after the day
        skip,
    ]
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), [_row(r) for r in rows])
    # When
    report = build_report(engine, date(2026, 3, 14), TAIPEI)
    # Then
    by_day = {r.provider: r for r in report.day_rows}
    by_month = {r.provider: r for r in report.month_rows}
    assert (by_day["ollama"].calls, by_day["ollama"].failed) == (2, 1)
    assert by_month["gemini"].calls == 2 and by_month["gemini"].tokens == 3000
    # a hop refused by an open breaker is a skip, never a call (aipool report's words)
    assert (by_day["claude"].calls, by_day["claude"].skipped) == (0, {"breaker": 1})
    assert report.day_cost == Decimal("0.0015") and report.month_cost == Decimal("0.003")
    console = Console(record=True, width=160)
    render_report(report, console, lang="en")
    text = console.export_text()
    assert "Month to date 2026-03" in text and "ollama" in text and "Calls" in text
    assert "breaker 1" in text
    note = report_notification(report, lang="zh-TW")
    assert note.summary.startswith("AI 預算日報") and note.body and "gemini" in note.body
