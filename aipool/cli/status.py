"""``aipool status``: the pool right now, and which Redis and ledger that was read from.

Breaker state and quota use per provider (Redis), today's calls, failures, skips, p95 latency and
cost per provider (the ledger), and the messages waiting per queue (the broker). It only reads:
it never starts a Redis, and without one it says how to get one.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console

from aipool.cli.lang import LangOption, chosen


def today_in_ledger(ledger: str) -> tuple[str, list[Any]] | None:
    """Today's local day and its per-provider summary, ``None`` when there is no ledger yet."""
    from aipool.cli.pool import ledger_engine
    from aipool.errors import PoolUnavailable
    from aipool.ledger.summary import summarize_day
    from aipool.periods import local_day, pool_zone

    try:
        engine = ledger_engine(ledger)
    except PoolUnavailable:
        return None
    try:
        day = local_day(datetime.now(UTC), pool_zone())
        return day.isoformat(), summarize_day(engine, day)
    finally:
        engine.dispose()


@dataclass(frozen=True)
class Snapshot:
    """Everything ``status`` read, and where from."""

    redis: str
    ledger: str
    breakers: dict[str, Any]
    depths: dict[str, int]
    today: tuple[str, list[Any]] | None
    pending: int | None


def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON.")] = False,
    serve: Annotated[
        bool, typer.Option(help="Serve GET /api/v1/health/ai-usage instead of printing once.")
    ] = False,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port for --serve.")] = 8088,
    host: Annotated[
        str, typer.Option(help="Interface for --serve (0.0.0.0: every interface).")
    ] = "127.0.0.1",
    lang: LangOption = None,
) -> None:
    """Breakers, quotas, today's usage per provider and queue depths, and where they were read."""
    from aipool.cli.pool import ledger_url, pending_records, redis_url
    from aipool.health import required_token, usage_report
    from aipool.health import serve as serve_health
    from aipool.redis_url import connect

    if serve:
        token = required_token()  # no login: refused before anything else
        serve_health(host, port, redis_url(), token)
        return
    url = redis_url()
    client = connect(url)
    try:
        breakers = usage_report(client)
    finally:
        client.close()
    from aipool.pool_state import broker_queue_depths
    from celeryconfig import QUEUES
    from workers.app import app
    from workers.default_queue import CELERY_DEFAULT_QUEUE

    ledger = ledger_url()
    snapshot = Snapshot(
        redis=url,
        ledger=ledger,
        breakers=breakers,
        depths=broker_queue_depths(app, (*QUEUES, CELERY_DEFAULT_QUEUE)),
        today=today_in_ledger(ledger),
        pending=pending_records(url),
    )
    if as_json:
        _print_json(snapshot)
    else:
        _print_tables(snapshot, chosen(lang))


def _print_json(snap: Snapshot) -> None:
    from aipool.pool_location import describe_database, describe_redis

    body = {
        "redis": describe_redis(snap.redis),
        "ledger": describe_database(snap.ledger),
        "providers": snap.breakers,
        "queues": snap.depths,
        "today": None
        if snap.today is None
        else {
            "day": snap.today[0],
            "providers": [
                {**asdict(s), "failed": s.failed, "cost_usd": str(s.cost_usd)}
                for s in snap.today[1]
            ],
        },
        "pending_records": snap.pending,
    }
    Console().print_json(json.dumps(body, ensure_ascii=False))


def _print_tables(snap: Snapshot, lang: str) -> None:
    from aipool.cli.pool import say_pending, say_where
    from aipool.periods import pool_zone
    from aipool.status_view import render_queues, render_status, render_summary
    from aipool.usage_words import words

    console = Console()
    say_where(console, snap.redis, snap.ledger)
    render_status(snap.breakers, console)
    if snap.today is None:
        console.print("no ledger yet: nothing recorded today", highlight=False)
    else:
        title = f"{words(lang)['today']} {snap.today[0]} ({pool_zone()})"
        render_summary(snap.today[1], console, lang=lang, title=title)
    render_queues(snap.depths, console, lang=lang)
    say_pending(console, snap.pending)


def register(app: typer.Typer) -> None:
    app.command()(status)
