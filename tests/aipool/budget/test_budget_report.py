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
    assert (by_day["claude"].calls, by_day["claude"].skipped) == (0, {"circuit_open": 1})
    assert report.day_cost == Decimal("0.0015") and report.month_cost == Decimal("0.003")
    console = Console(record=True, width=160)
    render_report(report, console, lang="en")
    text = console.export_text()
    assert "Month to date 2026-03" in text and "ollama" in text and "Calls" in text
    assert "breaker 1" in text
    note = report_notification(report, lang="zh-TW")
    assert note.summary.startswith("AI 預算日報") and note.body and "gemini" in note.body


def test_given_two_services_when_reported_then_a_table_per_service_beside_the_providers(
    engine: Engine, tmp_path, monkeypatch
) -> None:
    # Given batch and triage declared, and a day where each made Gemini calls
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[rules]]\nname = "all"\nprovider = "gemini"\n\n'
        '[services.batch]\nname = "Nightly summaries"\nmonthly_budget_usd = 1\n\n'
        '[services.triage]\nname = "Alert triage"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(routes))
    day = datetime(2026, 3, 14, 12, tzinfo=TAIPEI)
    rows = [
        UsageRecord(
            f"{service}{i}", 0, "gemini", "m", "ok", True, input_tokens=100, output_tokens=50,
            cost_usd=Decimal("0.25"), created_at=day, service=service,
        )
        for service, n in (("batch", 3), ("triage", 1))
        for i in range(n)
    ]  # fmt: skip
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), [_row(r) for r in rows])
    # When the daily report is built and sent
    report = build_report(engine, date(2026, 3, 14), TAIPEI)
    body = report_notification(report, lang="en").body or ""
    # Then it has a line per service, which add up to the providers' day
    assert report.services is not None
    lines = {line.service: line for line in report.services.day_lines}
    assert [lines["batch"].usage.tokens, lines["triage"].usage.tokens] == [450, 150]
    assert lines["batch"].budget_used == 0.75
    assert sum(line.usage.cost_usd for line in lines.values()) == report.day_cost
    assert "Per service 2026-03-14" in body and "batch (Nightly summaries)" in body
    assert "$0.7500 / $1 (75%)" in body
