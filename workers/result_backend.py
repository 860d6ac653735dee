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

from aipool.attempt.result_write import ResultWrite, written_already
from aipool.ledger.outbox import OUTBOX
from aipool.ledger.record import UsageRecord
from aipool.redis.lua import LuaScripts
from aipool.redis.results import WaitsOutOutages
from aipool.redis.sentinel import pool_place
from workers.runtime import shared_redis, usage_log

_SCRIPTS = LuaScripts("aipool.attempt", "store_result")


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
        if written_already(bytes_to_str(task_id)):
            # The hop's finish wrote this result with its answer (FinishWriter): the same meta,
            # and nothing may be written over it.
            return result
        self.ensure(self._write, self._encoded(task_id, result, state, traceback, request))
        return result

    def _encoded(
        self, task_id: Any, result: Any, state: str, traceback: Any, request: Any
    ) -> tuple[Any, Any, Any]:
        """The result's key, encoded meta and expiry: Celery's own _store_result
        (celery.backends.base.BaseKeyValueStoreBackend) up to its write."""
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
        return self.get_key_for_task(task_id), value, expires

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


class FinishWriter:
    """Celery's result write of one ``ai.generate`` request, handed to the ``finish`` that
    records its answer (:mod:`aipool.attempt.result_write`).

    Only where that saves a round trip and changes nothing Celery does: a result backend on one
    Redis server (not Sentinel's: its client follows a master of its own), the attempts' and the
    ledger's (same server, same database), and a request with no callbacks or chain (Celery adds
    the children they make to the result after the task returns). A chord or group member is
    written here: Celery still reports it to its chord (``mark_as_done`` does, its store
    skipped), and a group reads each member's result from its key.
    """

    def __init__(self, task: Any) -> None:
        self.task = task
        self._records: dict[str, list[UsageRecord]] = {}

    def prepare(self, task_id: str, result: dict[str, Any]) -> ResultWrite | None:
        backend, request = self.task.backend, self.task.request
        if type(backend) is not RedisBackend or not backend._shares_ledger():
            return None
        if request.is_eager or request.callbacks or request.chain or self.task.ignore_result:
            return None
        if getattr(request, "ignore_result", False):
            return None
        try:
            key, value, expires = backend._encoded(
                task_id,
                backend.encode_result(result, states.SUCCESS),
                states.SUCCESS,
                None,
                request,
            )
        except BackendStoreError:
            return None  # Celery's own store fails it as it would
        log = usage_log()
        records = log.held() if OUTBOX.holding else []
        self._records[task_id] = records
        return ResultWrite(
            task_id=task_id,
            key=bytes_to_str(key),
            value=bytes_to_str(value),
            expires=int(expires or 0),
            records=tuple(record.to_json() for record in records),
        )

    def missed(self, write: ResultWrite) -> None:
        usage_log().missed(self._records.pop(write.task_id, []))


def finish_writer(task: Any) -> FinishWriter:
    """The writer ``task``'s hop hands its ``finish``."""
    return FinishWriter(task)


# The producer side's ResultConsumer is replaced on purpose (mypy: incompatible definitions).
class RedisBackend(WaitsOutOutages, OneWriteResults):  # type: ignore[misc]
    """The pool's result backend on one Redis server (``redis://``, ``rediss://``); a producer
    waiting on it rides out a Redis outage (:mod:`aipool.redis.results`)."""


class SentinelBackend(WaitsOutOutages, OneWriteResults, celery_redis.SentinelBackend):  # type: ignore[misc]
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
