"""The daily budget report: per provider, the day and the month to date.

Figures come from the raw ledger rows of each period (one index range scan of ``created_at``
per period), so the day is exact to the last drain and p95 latencies are exact percentiles, not
bounds. The month-to-date scan grows with the month's rows; it runs once a day (09:00).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import date, tzinfo
from decimal import Decimal

from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine

from aipool.budget.messages import alert_lang, display_name
from aipool.ledger.rollup import Aggregate, aggregate
from aipool.notify import Notification
from aipool.periods import day_range, month_range, pool_zone


@dataclass(frozen=True)
class Report:
    """Per-provider totals for ``day`` and for its month up to the end of ``day``."""

    day: date
    timezone: str
    day_rows: list[Aggregate]
    month_rows: list[Aggregate]

    @property
    def day_cost(self) -> Decimal:
        """Total cost of the day."""
        return sum((r.cost_usd for r in self.day_rows), Decimal(0))

    @property
    def month_cost(self) -> Decimal:
        """Total cost of the month to date."""
        return sum((r.cost_usd for r in self.month_rows), Decimal(0))


def build_report(engine: Engine, day: date, tz: tzinfo | str | None = None) -> Report:
    """Totals per provider for the local calendar ``day`` and its month up to that day."""
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    day_start, day_end = day_range(day, zone)
    month_start_utc, _ = month_range(day, zone)
    with engine.connect() as conn:
        day_rows = aggregate(conn, day_start, day_end, by_model=False)
        month_rows = aggregate(conn, month_start_utc, day_end, by_model=False)
    return Report(day, str(zone), day_rows, month_rows)


_HEADERS = {
    "zh-TW": ("供應商", "請求", "成功率", "Tokens", "成本 $", "平均延遲 ms", "p95 ms", "備援"),
    "en": ("Provider", "Requests", "Success", "Tokens", "Cost $", "Avg ms", "p95 ms", "Fallbacks"),
}


def _cells(r: Aggregate) -> list[str]:
    rate = "-" if r.success_rate is None else f"{r.success_rate:.1%}"
    avg = "-" if r.avg_latency_ms is None else f"{r.avg_latency_ms:.0f}"
    p95 = "-" if r.p95_latency_ms is None else f"{r.p95_latency_ms:.0f}"
    return [
        display_name(r.provider),
        f"{r.requests:,}",
        rate,
        f"{r.tokens:,}",
        f"{r.cost_usd:.4f}",
        avg,
        p95,
        f"{r.fallbacks:,}",
    ]


def _table(title: str, rows: list[Aggregate], lang: str) -> Table:
    table = Table(title=title)
    for i, header in enumerate(_HEADERS[lang]):
        table.add_column(header, justify="left" if i == 0 else "right")
    for r in rows:
        table.add_row(*_cells(r))
    if not rows:
        table.add_row("-", "0", "-", "0", "0.0000", "-", "-", "0")
    return table


def _titles(report: Report, lang: str) -> tuple[str, str]:
    month = report.day.strftime("%Y-%m")
    if lang == "en":
        return (
            f"AI usage {report.day} ({report.timezone}), cost ${report.day_cost:.2f}",
            f"Month to date {month}, cost ${report.month_cost:.2f}",
        )
    return (
        f"AI 用量日報 {report.day}（{report.timezone}），成本 ${report.day_cost:.2f}",
        f"本月累計 {month}，成本 ${report.month_cost:.2f}",
    )


def render_report(report: Report, console: Console | None = None, lang: str | None = None) -> None:
    """Print the report as two Rich tables: the day, then the month to date."""
    lang = alert_lang(lang)
    console = console or Console()
    day_title, month_title = _titles(report, lang)
    console.print(_table(day_title, report.day_rows, lang))
    console.print(_table(month_title, report.month_rows, lang))


def report_notification(report: Report, lang: str | None = None) -> Notification:
    """The report as a notification (plain-text tables in ``body``) for the notifiers."""
    lang = alert_lang(lang)
    console = Console(width=110, record=True, file=io.StringIO(), color_system=None)
    render_report(report, console, lang)
    day_title, _ = _titles(report, lang)
    summary = ("Daily AI budget report: " if lang == "en" else "AI 預算日報：") + day_title
    return Notification(
        summary=summary,
        severity="info",
        status="firing",
        labels={"alertname": "daily_report", "rule": "daily_report", "day": str(report.day)},
        body=console.export_text(),
    )
