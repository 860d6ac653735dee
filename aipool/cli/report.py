"""``aipool report``: per provider, a day and its month to date, from the ledger.

It names the ledger it read, and when the pool's Redis can be found it says how many usage
records still wait there to be drained (the ledger lags the pool by up to one drain).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

import typer

from aipool.cli.lang import LangOption, chosen


def _day(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a calendar day; expected YYYY-MM-DD, e.g. 2026-11-29"
        ) from None
    return value


def report(
    day: Annotated[
        str | None,
        typer.Option(callback=_day, help="Local calendar day, YYYY-MM-DD (default: today)."),
    ] = None,
    lang: LangOption = None,
) -> None:
    """Per provider: calls, failures by reason, skips, answers, tokens, cost, p50/p95 latency."""
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
    from aipool.status_view import render_summary
    from aipool.usage_words import words

    language = chosen(lang)
    zone = pool_zone()
    chosen_day = date.fromisoformat(day) if day else local_day(datetime.now(UTC), zone)
    url = ledger_url()
    engine = ledger_engine(url)
    try:
        today = summarize_day(engine, chosen_day, zone)
        month = summarize_month_to(engine, chosen_day, zone)
    finally:
        engine.dispose()
    from aipool.cli.console import console as make_console

    console = make_console()
    say_where(console, None, url, language)
    w = words(language)
    render_summary(today, console, lang=language, title=f"{chosen_day} ({zone})")
    render_summary(
        month, console, lang=language, title=f"{w['month']} {chosen_day.strftime('%Y-%m')}"
    )
    say_pending(console, pending_records(optional_redis_url()), language)


def register(app: typer.Typer) -> None:
    app.command()(report)
