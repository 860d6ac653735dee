"""``aipool redis``: an embedded Redis in the foreground, for trying the pool on one machine.

While it runs, every aipool process on this machine started without ``REDIS_URL`` (workers, beat,
``submit``, ``status``) finds it, with its ledger; Ctrl-C stops it. It prints the URL of the server
for redis-py clients and for Celery producers (``redis+socket://``, kombu's spelling).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from aipool.children import signals_end_the_command
from aipool.cli.console import console as make_console
from aipool.ledger.db import DEFAULT_SQLITE_PATH, database_url
from aipool.redis.embedded import EmbeddedRedis
from aipool.redis.url import kombu_url
from aipool.settings import settings
from aipool.views.pool_location import describe_database


def embedded_redis(
    data_dir: Annotated[
        Path,
        typer.Option(
            help="Directory for the server's socket, log and append-only file (what it holds "
            "survives a restart on the same directory)."
        ),
    ] = Path("var/redis"),
) -> None:
    """Run an embedded Redis until Ctrl-C; aipool processes here without REDIS_URL use it."""

    console = make_console()
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
                soft_wrap=True,
            )
            # The same socket spelled for each kind of client: a producer of its own needs the
            # Celery spelling, which used to appear only in a worker's log line.
            for line in producer_urls(running.redis_url):
                console.print(line, highlight=False, soft_wrap=True)
            if settings().redis_url:
                console.print("[yellow]REDIS_URL is set in this shell: unset it to use this one.")
            while True:
                time.sleep(3600)
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            server.stop()
    console.print("embedded Redis stopped")


def producer_urls(redis_url: str) -> list[str]:
    """How clients name the Redis at ``redis_url``: redis-py (and aipool), and Celery producers
    (broker and result backend)."""

    return [
        f"redis-py clients and aipool: export REDIS_URL={redis_url}",
        f"Celery producers (broker and result backend): {kombu_url(redis_url)}",
    ]


def register(app: typer.Typer) -> None:
    app.command("redis")(embedded_redis)
