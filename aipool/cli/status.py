"""``aipool status``: the pool right now, and which Redis and ledger that was read from.

Breaker state and quota use per provider (Redis), today's calls, failures, skips, p95 latency and
cost per provider and the month's cost against the budget (the ledger), and the messages waiting
per queue (the broker): one reading (:func:`aipool.views.pool_report.read_snapshot`), printed as tables
in one language (English unless ``--lang zh-TW``), as JSON (``--json``), or served
(``--serve``: ``GET /api/v1/health/ai-usage`` answers the same JSON). It only reads: it never
starts a Redis, and without one it says how to get one.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from aipool.cli.console import console
from aipool.cli.grouping import By, ByOption
from aipool.cli.lang import LangOption, chosen
from aipool.cli.pool import ledger_url, redis_url, say_pending, say_where
from aipool.periods import pool_zone
from aipool.redis.url import connect
from aipool.redis.url import redis_url as unchecked_redis_url
from aipool.views.pool_report import Snapshot, read_snapshot
from aipool.views.service_tables import services_table
from aipool.views.status_tables import (
    render_queues,
    render_replication,
    render_status,
    render_summary,
)
from aipool.views.usage_words import words


def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON.")] = False,
    serve: Annotated[
        bool,
        typer.Option(
            help="Serve the same JSON at GET /api/v1/health/ai-usage instead of printing once."
        ),
    ] = False,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port for --serve.")] = 8088,
    host: Annotated[
        str, typer.Option(help="Interface for --serve (0.0.0.0: every interface).")
    ] = "127.0.0.1",
    lang: LangOption = None,
    by: ByOption = By.provider,
) -> None:
    """Breakers, quotas, today's usage and cost, the month's budget, queue depths, and where
    they were read; ``--by service``: today's usage, budget and shares per service instead."""
    # deferred: `aipool` imports every command at start; only this one loads aipool.views.health (~23 ms)
    from aipool.views.health import required_token
    from aipool.views.health import serve as serve_health

    if serve:
        token = required_token()  # no login: refused before anything else
        # Not pinged: the server must start while Redis is down, and answer /healthz 503.
        serving = unchecked_redis_url()
        ledger = ledger_url()
        # deferred: loads sqlalchemy, alembic, celery (~1189 ms of start-up) only when this runs
        from workers.app import app as celery_app

        def read(client: Any) -> dict[str, Any]:
            snapshot = read_snapshot(client, redis_url=serving, ledger_url=ledger, app=celery_app)
            return snapshot.to_json()

        serve_health(host, port, serving, token, read)
        return
    url = redis_url()
    ledger = ledger_url()
    # deferred: `aipool` imports every command at start; only this one loads celery, kombu (~215 ms)
    from workers.app import app

    client = connect(url)
    try:
        snapshot = read_snapshot(client, redis_url=url, ledger_url=ledger, app=app)
    finally:
        client.close()
    if as_json:
        console().print_json(json.dumps(snapshot.to_json(), ensure_ascii=False))
    elif by is By.service:
        _print_services(snapshot, chosen(lang))
    else:
        _print_tables(snapshot, chosen(lang))
    if snapshot.ledger_error is not None:
        # What Redis holds was shown; the ledger's part was not: a failure, said on stderr too.
        say_ledger_unreachable(snapshot, chosen(lang))
        raise typer.Exit(1)


def say_ledger_unreachable(snap: Snapshot, lang: str) -> None:
    """One line on stderr: the ledger could not be read, so today's usage and the budget are
    unknown (not zero)."""
    from rich.console import Console

    from aipool.views.pool_location import describe_database

    line = words(lang)["ledger_unreachable"].format(
        where=describe_database(snap.ledger), why=snap.ledger_error
    )
    Console(stderr=True, soft_wrap=True).print(f"aipool: {line}", highlight=False, markup=False)


def _print_tables(snap: Snapshot, lang: str) -> None:

    out = console()
    w = words(lang)
    say_where(out, snap.redis, snap.ledger, lang)
    render_replication(snap.replication, out, lang=lang)
    render_status(snap.providers, out, lang=lang)
    if snap.ledger_error is not None:
        out.print(f"[red]{w['ledger_unknown']}[/]", highlight=False, soft_wrap=True)
    elif snap.today is None:
        out.print(w["no_ledger"], highlight=False)
    else:
        title = f"{w['today']} {snap.today[0]} ({pool_zone()})"
        render_summary(snap.today[1], out, lang=lang, title=title)
    if snap.budget is not None:
        b = snap.budget
        line = w["budget"].format(
            month=b.month,
            cost=f"{b.cost_usd:.4f}",
            budget=b.budget_usd,
            percent=f"{b.used * 100:.0f}",
        )
        out.print(line, highlight=False, soft_wrap=True)
    render_queues(snap.queues, out, lang=lang, ages=snap.queue_ages, consumers=snap.consumers)
    say_pending(out, snap.pending, lang)


def _print_services(snap: Snapshot, lang: str) -> None:

    out = console()
    say_where(out, snap.redis, snap.ledger, lang)
    if snap.ledger_error is not None:
        out.print(f"[red]{words(lang)['ledger_unknown']}[/]", highlight=False, soft_wrap=True)
    elif snap.services is None:
        out.print(words(lang)["no_ledger"], highlight=False)
    else:
        title = f"{words(lang)['today']} {snap.services.day} ({pool_zone()})"
        out.print(services_table(snap.services.day_lines, lang=lang, title=title))
    say_pending(out, snap.pending, lang)


def register(app: typer.Typer) -> None:
    app.command()(status)
