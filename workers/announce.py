"""The first log line of a worker or beat: which Redis it serves and which ledger it writes.

An embedded Redis (a Unix socket, see :mod:`aipool.redis.embedded`) is reachable only from this
machine, and a worker on one serves only producers that found the same server: that is said as a
warning, so nobody mistakes such a worker for one of the shared pool.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger

from aipool.redis.embedded import is_embedded
from aipool.redis.url import redis_url
from aipool.views.pool_location import describe_database, describe_redis

log = logging.getLogger("aipool.workers")

_said = False


def where_line(broker_url: str, redis_url: str, database_url: str) -> tuple[int, str]:
    """The level and text of the line (pure, for tests)."""
    ledger = describe_database(database_url)
    if is_embedded(broker_url):
        return logging.WARNING, (
            f"broker is an embedded Redis: {describe_redis(broker_url)}; only processes on this "
            f"machine that find it reach this pool (set REDIS_URL for a shared one); ledger {ledger}"
        )
    return logging.INFO, (
        f"broker {describe_redis(broker_url)}; breakers and quotas on "
        f"{describe_redis(redis_url)}; ledger {ledger}"
    )


def connect(app: Celery) -> None:
    """Log :func:`where_line` for ``app`` once per process, right after Celery set its logging up."""

    def say_where(**_: Any) -> None:
        global _said
        if _said:
            return
        _said = True
        # Here, not at the top: a producer importing the app does not load SQLAlchemy for it.
        from aipool.ledger.db import database_url

        level, text = where_line(str(app.conf.broker_url), redis_url(), database_url())
        log.log(level, "%s", text)

    after_setup_logger.connect(say_where, weak=False)
