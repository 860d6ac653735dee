"""Each service's use as a table (``aipool status --by service``, ``aipool report --by service``,
the daily report): requests, calls, tokens and cost, the month's spend against the service's
budget, and the day's use of its shares of providers' daily limits. English or zh-TW, as the
other tables (:mod:`aipool.views.usage_words`)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from rich.console import Console
from rich.table import Table

from aipool.views.fitted_table import FittedTable
from aipool.views.service_report import ServiceLine, ServicesReport, ShareUse
from aipool.views.usage_words import words

SERVICE_WORDS: dict[str, dict[str, str]] = {
    "en": {
        "service": "Service",
        "requests": "Requests",
        "calls": "Calls",
        "tokens": "Tokens",
        "cost": "Cost $",
        "cached": "Cached (saved $)",
        "budget": "Month / budget",
        "shares": "Share used today",
        "no_budget": "no budget",
        "no_shares": "-",
        "daily_tokens": "tokens",
        "daily_requests": "requests",
    },
    "zh-TW": {
        "service": "服務",
        "requests": "請求",
        "calls": "呼叫",
        "tokens": "Tokens",
        "cost": "成本 $",
        "cached": "快取（節省 $）",
        "budget": "本月 / 預算",
        "shares": "今日配額份額",
        "no_budget": "無預算",
        "no_shares": "-",
        "daily_tokens": "tokens",
        "daily_requests": "請求",
    },
}


def service_words(lang: str) -> dict[str, str]:
    """The per-service vocabulary of ``lang``."""
    return SERVICE_WORDS["en" if lang == "en" else "zh-TW"]


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def budget_cell(line: ServiceLine, lang: str) -> str:
    """``$0.4200 / $5 (8%)``, or the words for no budget."""
    if line.budget_usd is None or line.budget_used is None:
        return service_words(lang)["no_budget"]
    return f"${line.month_cost_usd:.4f} / ${line.budget_usd} ({_percent(line.budget_used)})"


def share_cell(shares: Sequence[ShareUse], lang: str) -> str:
    """``gemini tokens 1,850 / 2,000 (93%)``, one per line, or ``-``."""
    w = service_words(lang)
    if not shares:
        return w["no_shares"]
    return "\n".join(
        f"{s.provider} {w[s.limit]} {s.used:,} / {s.allowed:,} ({_percent(s.used_fraction)})"
        for s in shares
    )


def services_table(
    lines: Sequence[ServiceLine], *, lang: str, title: str, shares: bool = True
) -> Table:
    """One row per service, the total cost in the title; ``shares``: with the day's use of each
    service's shares of daily limits (a month's table has none)."""
    w = service_words(lang)
    total = sum((line.usage.cost_usd for line in lines), Decimal(0))
    table = FittedTable(title=f"{title}  ${total:.4f}")
    table.add_column(w["service"])
    columns = (
        "requests",
        "calls",
        "tokens",
        "cost",
        "cached",
        "budget",
        *(("shares",) if shares else ()),
    )
    for key in columns:
        table.add_column(w[key], justify="right")
    for line in lines:
        u = line.usage
        label = line.service if line.name == line.service else f"{line.service} ({line.name})"
        cells = [f"{u.requests:,}", f"{u.calls:,}", f"{u.tokens:,}", f"{u.cost_usd:.6f}"]
        cells.append(f"{u.cached:,} (${u.saved_usd:.6f})" if u.cached else "0")
        cells.append(budget_cell(line, lang))
        if shares:
            cells.append(share_cell(line.shares, lang))
        table.add_row(label, *cells)
    if not lines:
        table.add_row(words(lang)["none"], *("0" for _ in columns))
    return table


def render_services(
    report: ServicesReport, console: Console, *, lang: str, titles: tuple[str, str]
) -> None:
    """Print the day's table and the month-to-date table, titled ``titles``."""
    day_title, month_title = titles
    console.print(services_table(report.day_lines, lang=lang, title=day_title))
    console.print(services_table(report.month_lines, lang=lang, title=month_title, shares=False))
