"""``aipool migrate``: create or upgrade the ledger tables."""

from __future__ import annotations

import typer

from aipool.cli.console import console
from aipool.cli.pool import ledger_url
from aipool.ledger.db import migrate as upgrade
from aipool.views.pool_location import describe_database


def migrate() -> None:
    """Create or upgrade the ledger tables (DATABASE_URL, default a SQLite file under ./var)."""

    url = ledger_url()
    if url.startswith("sqlite:///"):
        from pathlib import Path

        Path(url[len("sqlite:///") :]).parent.mkdir(parents=True, exist_ok=True)
    upgrade(url)
    console().print(f"ledger schema is current at {describe_database(url)}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(migrate)
