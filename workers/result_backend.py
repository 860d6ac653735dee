"""Celery's Redis result backend, writing a result in one round trip with the hop's usage records.

Celery stores a result with two round trips: a GET (nothing is written over a SUCCESS already
stored, so a lost worker's late answer never replaces one its producer may have read), then a
pipeline of SETEX and PUBLISH. Here both are one script (``store_result.lua``): the same rule,
checked atomically, and the ledger record of the hop that produced the result pushed in the same
step, so answering a request costs neither the GET's round trip nor one for the ledger
(:mod:`aipool.ledger.outbox` says what is held and when). Records ride only when the result
backend is the Redis that holds the ledger's spool (same server, same database); an operator who
points ``CELERY_RESULT_BACKEND`` elsewhere gets the script without records, and each record is
pushed on its own when the task ends. Everything else (groups, chords, reads) is Celery's.

A Redis behind Sentinel (``sentinel://``) gets the same writes on Celery's Sentinel backend, whose
client follows the master across a failover (:mod:`aipool.redis.sentinel`).

Installed on the pool's app by :func:`install`.
"""

from __future__ import annotations

from typing import Any

from celery import Celery, states
from celery.backends import redis as celery_redis
from celery.exceptions import BackendStoreError
from kombu.utils.encoding import bytes_to_str

from aipool.ledger.outbox import OUTBOX
from aipool.ledger.record import UsageRecord
from aipool.redis.lua import LuaScripts
from aipool.redis.sentinel import pool_place
from workers.runtime import shared_redis, usage_log

_SCRIPTS = LuaScripts("workers", "store_result")


class OneWriteResults(celery_redis.RedisBackend):
    """Celery's Redis result backend with a result's writes in one script, held usage records
    included; :class:`RedisBackend` and :class:`SentinelBackend` are it on either client."""

    _rides: bool | None = None

    def _store_result(
        self,
        task_id: Any,
        result: Any,
        state: str,
        traceback: Any = None,
        request: Any = None,
        **kwargs: Any,
    ) -> Any:
        # Celery's own _store_result (celery.backends.base.BaseKeyValueStoreBackend), with its
        # GET folded into the write.
        meta = self._get_result_meta(  # type: ignore[attr-defined]  # private, not in celery-types' stub
            result=result, state=state, traceback=traceback, request=request
        )
        meta["task_id"] = bytes_to_str(task_id)
        value = self.encode(meta)
        if isinstance(value, str) and len(value) > self._MAX_STR_VALUE_SIZE:
            raise BackendStoreError(
                "value too large for Redis backend", state=state, task_id=task_id
            )
        expires = self.failure_expires if state == states.FAILURE else self.expires  # type: ignore[attr-defined]  # the key-value backend's, not in celery-types' stub
        self.ensure(self._write, (self.get_key_for_task(task_id), value, expires))
        return result

    def _write(self, key: Any, value: Any, expires: Any) -> None:

        log = usage_log()
        records: list[UsageRecord] = log.held() if OUTBOX.holding and self._shares_ledger() else []
        try:
            _SCRIPTS.for_client(self.client)["store_result"](
                keys=[key, log.key],
                args=[value, int(expires or 0), *(record.to_json() for record in records)],
            )
        except BaseException:
            # Celery retries the write (result_backend_always_retry), and the records go with
            # it; if it gives up, the task's end pushes them on their own.
            log.missed(records)
            raise

    def _shares_ledger(self) -> bool:
        """Whether this backend's Redis is the one the ledger's spool is in."""
        if self._rides is None:
            mine = pool_place(self.client.connection_pool)
            self._rides = mine == pool_place(shared_redis().connection_pool)
        return self._rides


class RedisBackend(OneWriteResults):
    """The pool's result backend on one Redis server (``redis://``, ``rediss://``)."""


class SentinelBackend(OneWriteResults, celery_redis.SentinelBackend):
    """The pool's result backend on the master a set of sentinels names (``sentinel://``)."""


#: The result backends of the pool, by the URL scheme Celery resolves them from.
BACKENDS = {
    "redis": f"{__name__}:RedisBackend",
    "rediss": f"{__name__}:RedisBackend",
    "sentinel": f"{__name__}:SentinelBackend",
}


def install(app: Celery) -> None:
    """Make ``redis://``, ``rediss://`` and ``sentinel://`` result backends of ``app`` the pool's.

    Through the loader's aliases rather than the ``result_backend`` URL, because the ``celery``
    command sets that URL from ``CELERY_RESULT_BACKEND`` over whatever the settings say.
    """
    app.loader.override_backends = {**app.loader.override_backends, **BACKENDS}
