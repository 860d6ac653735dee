"""``aipool redis``: an embedded Redis in the foreground, for trying the pool on one machine.

While it runs, every aipool process on this machine started without ``REDIS_URL`` (workers, beat,
``submit``, ``status``) finds it, with its ledger; Ctrl-C stops it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from aipool.settings import settings


def embedded_redis(
    data_dir: Annotated[
        Path, typer.Option(help="Directory for the server's socket and log.")
    ] = Path("var/redis"),
) -> None:
    """Run an embedded Redis until Ctrl-C; aipool processes here without REDIS_URL use it."""
    from aipool.children import signals_end_the_command
    from aipool.embedded_redis import EmbeddedRedis
    from aipool.ledger.db import DEFAULT_SQLITE_PATH, database_url
    from aipool.pool_location import describe_database

    console = Console()
    ledger = database_url() if settings().database_url else None
    ledger = ledger or f"sqlite:///{DEFAULT_SQLITE_PATH.resolve()}"
    server = EmbeddedRedis(data_dir, owner="aipool redis", database_url=ledger)
    with signals_end_the_command():
        try:
            running = server.start()
            console.print(
                f"embedded Redis at {running.redis_url} (ledger {describe_database(ledger)}); "
                "aipool processes on this machine started without REDIS_URL use it. "
                "Ctrl-C stops it.",
                highlight=False,
            )
            if settings().redis_url:
                console.print("[yellow]REDIS_URL is set in this shell: unset it to use this one.")
            while True:
                time.sleep(3600)
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            server.stop()
    console.print("embedded Redis stopped")


def register(app: typer.Typer) -> None:
    app.command("redis")(embedded_redis)
