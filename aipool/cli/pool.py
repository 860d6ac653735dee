"""Where a command finds the pool: its Redis and its ledger, said for people.

``REDIS_URL`` and ``DATABASE_URL`` when set; otherwise the embedded Redis a running
``aipool demo`` or ``aipool redis`` announced, and the ledger that goes with it. Nothing here
starts a server or creates a database file: a command that finds nothing says so.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from aipool.errors import NoRedis
from aipool.ledger.db import DEFAULT_SQLITE_PATH, database_url
from aipool.redis.url import adopt_embedded, close, connect, ping
from aipool.redis.url import redis_url as pool_redis_url
from aipool.settings import settings
from aipool.views.pool_location import describe_database, describe_redis
from aipool.views.pool_report import ledger_engine as existing_ledger
from aipool.views.pool_report import pending_records as waiting
from aipool.views.usage_words import words


def redis_url() -> str:
    """The pool's Redis (:func:`aipool.redis.url.redis_url`), checked to answer; raises
    ``NoRedis`` when there is none and ``PoolUnavailable`` when it does not answer."""

    url = pool_redis_url()
    ping(url)
    return url


def optional_redis_url() -> str | None:
    """The pool's Redis when there is one, else ``None`` (for commands that only peek: nothing is
    asked of it here)."""

    try:
        return pool_redis_url()
    except NoRedis:
        return None


def ledger_url() -> str:
    """The ledger's URL: ``DATABASE_URL``, the running embedded Redis's ledger, or the SQLite
    default (the file is not created here)."""

    adopt_embedded()
    if settings().database_url:
        return database_url()
    return f"sqlite:///{DEFAULT_SQLITE_PATH}"


def ledger_engine(url: str) -> Any:
    """An engine on an existing ledger (:func:`aipool.views.pool_report.ledger_engine`); raises
    ``PoolUnavailable`` when it has no tables yet."""

    return existing_ledger(url)


def say_where(console: Console, redis: str | None, ledger: str | None, lang: str = "en") -> None:
    """Print which Redis and which ledger a command read."""
    from rich.cells import cell_len

    w = words(lang)
    width = max(cell_len(w["redis"]), cell_len(w["ledger"])) + 2

    def padded(text: str) -> str:  # by screen cells: a CJK character takes two
        return text + " " * (width - cell_len(text))

    if redis is not None:
        label = padded(w["redis"])
        console.print(f"[bold]{label}[/]{describe_redis(redis)}", highlight=False, soft_wrap=True)
    if ledger is not None:
        label = padded(w["ledger"])
        console.print(
            f"[bold]{label}[/]{describe_database(ledger)}", highlight=False, soft_wrap=True
        )


#: :func:`pending_records` without a Redis to ask: no record can be waiting anywhere this
#: command knows of, so there is nothing to say.
NO_REDIS = -1


def pending_records(redis: str | None) -> int | None:
    """Usage records waiting in Redis to be drained into the ledger, ``None`` if Redis did not
    say, :data:`NO_REDIS` when there is no Redis to ask."""
    if redis is None:
        return NO_REDIS

    client = connect(redis)
    try:
        return waiting(client)
    finally:
        close(client)


def say_pending(console: Console, pending: int | None, lang: str = "en") -> None:
    """Say that records still wait in Redis (beat drains them every 5 s), when some do, and
    that they could not be counted when Redis did not answer: the figures beside may miss them."""

    if pending is None:
        line = words(lang)["pending_unknown"]
    elif pending > 0:
        line = words(lang)["pending"].format(n=f"{pending:,}")
    else:
        return
    console.print(f"[yellow]{line}[/]", highlight=False, soft_wrap=True)
