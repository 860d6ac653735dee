"""Celery's Redis result backend, carrying the hop's usage records in the result's own pipeline.

Celery writes a task's result with one pipeline (SETEX, PUBLISH). The ledger record of the hop that
produced the result goes into the same pipeline as one more LPUSH, so answering a request costs the
ledger no round trip (:mod:`aipool.ledger.outbox` says what is held and when). Records ride only
when the result backend is the Redis that holds the ledger's spool (same server, same database);
an operator who points ``CELERY_RESULT_BACKEND`` elsewhere gets the plain backend's behaviour and
each record is pushed on its own when the task ends.

Installed on the pool's app by :func:`install`.
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.backends import redis as celery_redis

from aipool.ledger.outbox import OUTBOX
from aipool.ledger.record import UsageRecord


class RedisBackend(celery_redis.RedisBackend):
    """A Redis result backend whose result writes also push held usage records."""

    _rides: bool | None = None

    def _set(self, key: Any, value: Any, expires: Any = None) -> None:
        from workers.runtime import usage_log

        if not (OUTBOX.holding and self._shares_ledger()):
            super()._set(key, value, expires)
            return
        if expires is None:
            expires = self.expires
        records: list[UsageRecord] = []
        try:
            with self.client.pipeline() as pipe:
                # SET with EX is SETEX (which redis-py deprecates), as Celery's own write does.
                pipe.set(key, value, ex=int(expires) if expires else None)
                pipe.publish(key, value)
                records = usage_log().ride_in(pipe)
                pipe.execute()
        except BaseException:
            # Celery retries the result write (result_backend_always_retry), and the records
            # go with it; if it gives up, the task's end pushes them on their own.
            usage_log().missed(records)
            raise

    def _shares_ledger(self) -> bool:
        """Whether this backend's Redis is the one the ledger's spool is in."""
        if self._rides is None:
            from workers.runtime import shared_redis

            mine = self.client.connection_pool.connection_kwargs
            ledger = shared_redis().connection_pool.connection_kwargs
            self._rides = all(
                mine.get(name) == ledger.get(name) for name in ("host", "port", "db", "path")
            )
        return self._rides


def install(app: Celery) -> None:
    """Make ``redis://`` and ``rediss://`` result backends of ``app`` this class.

    Through the loader's aliases rather than the ``result_backend`` URL, because the ``celery``
    command sets that URL from ``CELERY_RESULT_BACKEND`` over whatever the settings say.
    """
    app.loader.override_backends = {
        **app.loader.override_backends,
        "redis": f"{__name__}:RedisBackend",
        "rediss": f"{__name__}:RedisBackend",
    }
