"""The daily budget report: per provider and per service, the day and the month to date.

Figures come from the raw ledger rows of each period (one index range scan of ``created_at``
per period), so the day is exact to the last drain and p95 latencies are exact percentiles, not
bounds. A hop that never called its provider (breaker open, no quota, deadline) is a skip, not
a call: the words are ``aipool report``'s (:mod:`aipool.views.usage_words`). The month-to-date scan grows with the month's rows; it runs once a day (09:00).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import date, tzinfo
from decimal import Decimal

from rich.console import Console
from sqlalchemy import Engine

from aipool.budget.messages import alert_lang
from aipool.ledger.summary import ProviderSummary, summarize_day, summarize_month_to
from aipool.notify import Notification
from aipool.periods import pool_zone
from aipool.routing.table import load_table
from aipool.settings import settings
from aipool.views.service_report import ServicesReport, read_services
from aipool.views.service_tables import render_services
from aipool.views.status_tables import summary_table


@dataclass(frozen=True)
class Report:
    """Per-provider totals for ``day`` and for its month up to the end of ``day``, in the words
    ``aipool report`` and ``aipool status`` use (calls, failed, skipped, answered)."""

    day: date
    timezone: str
    day_rows: list[ProviderSummary]
    month_rows: list[ProviderSummary]
    #: The same day and month per producing service (issue #24); ``None``: not read.
    services: ServicesReport | None = None

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
    return Report(
        day,
        str(zone),
        summarize_day(engine, day, zone),
        summarize_month_to(engine, day, zone),
        read_services(engine, day, zone, load_table(), settings().limits),
    )


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
    console.print(summary_table(report.day_rows, lang=lang, title=day_title))
    console.print(summary_table(report.month_rows, lang=lang, title=month_title))
    if report.services is not None:
        render_services(report.services, console, lang=lang, titles=_service_titles(report, lang))


def _service_titles(report: Report, lang: str) -> tuple[str, str]:
    month = report.day.strftime("%Y-%m")
    if lang == "en":
        return f"Per service {report.day}", f"Per service, month to date {month}"
    return f"各服務 {report.day}", f"各服務本月累計 {month}"


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
