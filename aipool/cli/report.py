"""``aipool report``: per provider, a day and its month to date, from the ledger.

It names the ledger it read, and when the pool's Redis can be found it says how many usage
records still wait there to be drained (the ledger lags the pool by up to one drain).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from aipool.cli.console import console as make_console
from aipool.cli.grouping import By, ByOption
from aipool.cli.lang import LangOption, chosen
from aipool.cli.pool import (
    ledger_engine,
    ledger_url,
    optional_redis_url,
    pending_records,
    say_pending,
    say_where,
)
from aipool.ledger.summary import summarize_day, summarize_month_to
from aipool.periods import local_day, pool_zone
from aipool.routing.table import load_table
from aipool.settings import settings
from aipool.views.service_report import read_services
from aipool.views.service_tables import render_services
from aipool.views.status_tables import render_summary
from aipool.views.usage_words import words

if TYPE_CHECKING:
    from aipool.views.service_report import ServicesReport


#: The days ``--day`` takes: a month in from either end of Python's calendar.
FIRST_DAY = date(1, 2, 1)
LAST_DAY = date(9999, 11, 30)


def _day(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a calendar day; expected YYYY-MM-DD, e.g. 2026-11-29"
        ) from None
    # The report reads the day's month and the instants around it in the pool's time zone:
    # the calendar's first and last months have no month before or after them to end on.
    if not FIRST_DAY <= day <= LAST_DAY:
        raise typer.BadParameter(
            f"{value!r} is outside the days a report can read ({FIRST_DAY} to {LAST_DAY})"
        )
    # A day to come has nothing recorded: its zeros would read as a quiet day (a mistyped year).
    zone = pool_zone()
    today = local_day(datetime.now(UTC), zone)
    if day > today:
        raise typer.BadParameter(
            f"{value!r} has not begun: it is {today} in the pool's time zone ({zone}), "
            "and nothing is recorded for a day to come"
        )
    return value


def report(
    day: Annotated[
        str | None,
        typer.Option(callback=_day, help="Local calendar day, YYYY-MM-DD (default: today)."),
    ] = None,
    lang: LangOption = None,
    by: ByOption = By.provider,
) -> None:
    """Per provider: calls, failures by reason, skips, answers, tokens, cost, p50/p95 latency.
    With ``--by service``, per service: requests, calls, tokens, cost, budget and shares used."""

    language = chosen(lang)
    zone = pool_zone()
    chosen_day = date.fromisoformat(day) if day else local_day(datetime.now(UTC), zone)
    url = ledger_url()
    engine = ledger_engine(url)

    console = make_console()
    w = words(language)
    day_title, month_title = (
        f"{chosen_day} ({zone})",
        f"{w['month']} {chosen_day.strftime('%Y-%m')}",
    )
    if by is By.service:
        try:
            services = _services(engine, chosen_day, zone)
        finally:
            engine.dispose()
        say_where(console, None, url, language)
        render_services(services, console, lang=language, titles=(day_title, month_title))
        say_pending(console, pending_records(optional_redis_url()), language)
        return
    try:
        today = summarize_day(engine, chosen_day, zone)
        month = summarize_month_to(engine, chosen_day, zone)
    finally:
        engine.dispose()
    say_where(console, None, url, language)
    render_summary(today, console, lang=language, title=day_title)
    render_summary(month, console, lang=language, title=month_title)
    say_pending(console, pending_records(optional_redis_url()), language)


def _services(engine: Any, day: date, zone: Any) -> ServicesReport:

    return read_services(engine, day, zone, load_table(), settings().limits)


def register(app: typer.Typer) -> None:
    app.command()(report)
