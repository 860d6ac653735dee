"""The pool's Celery app with test instruments (tests only).

``celery -A tests.support.instrumented_app worker`` serves exactly like ``workers.app``, plus:

- ``AIPOOL_TEST_HOPS_KEY``: every ``ai.generate`` hop appends what its message carried (queue,
  priority, expiry, time limits, kwargsrepr) as JSON to that Redis list, before it runs;
- ``tests.collect``: a chord body that returns the results it is given;
- ``tests.busy``: holds its process for the seconds it is given (a queue's backlog, made small);
- ``AIPOOL_TEST_CRASH_AT``: the first time the point it names is reached, the pool process SIGKILLs
  itself, the way the OOM killer would:

- ``dispatch``: a hop's call has ended and the hop is about to publish the next hop's message;
- ``ack``: a hop answered and its result is stored, but the message is not acked yet;
- ``finish``: a provider answered and the hop is about to record the answer (``finish``): nothing
  of it is recorded yet;
- ``store``: a hop answered (the answer is recorded with its attempt) and has not returned: where
  the result backend is the attempts' Redis, that ``finish`` wrote the producer's result too
  (issue #44); elsewhere the producer has nothing yet.

"First time" is pool-wide: a key in Redis (``AIPOOL_TEST_CRASH_FLAG``) is set when it fires.
``AIPOOL_TEST_CRASH_DELAY`` (seconds) holds the process that long before it dies, so its message
comes back later (past a deadline, say).
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

from celery.signals import before_task_publish, task_postrun, task_prerun

from aipool.attempt.lifecycle import AttemptBook
from tasks.generate import EXPIRES_AT_HEADER
from workers import result_backend
from workers.app import app

__all__ = ["app"]

_POINT = os.environ.get("AIPOOL_TEST_CRASH_AT", "")
_FLAG = os.environ.get("AIPOOL_TEST_CRASH_FLAG", "aipool:test:crashed")
_HOPS_KEY = os.environ.get("AIPOOL_TEST_HOPS_KEY", "")
_DELAY = float(os.environ.get("AIPOOL_TEST_CRASH_DELAY", "0") or 0)


@app.task(name="tests.collect")
def collect(results: list[Any]) -> list[Any]:
    """A chord body: the header's results, as they arrived."""
    return results


@app.task(name="tests.busy")
def busy(seconds: float) -> None:
    """Hold this pool process for ``seconds``: what waits behind it on its queue waits that long."""
    time.sleep(seconds)


@task_prerun.connect
def _record_hop(task: Any = None, **_: Any) -> None:
    if not _HOPS_KEY or getattr(task, "name", "") != "ai.generate":
        return
    from workers.runtime import shared_redis

    context = task.request
    delivery = context.delivery_info or {}
    seen = {
        "queue": delivery.get("routing_key"),
        "priority": delivery.get("priority"),
        "expires": context.expires,
        "expires_at": context.get(EXPIRES_AT_HEADER),
        "timelimit": list(context.timelimit or (None, None)),
        "kwargsrepr": context.get("kwargsrepr"),
    }
    shared_redis().rpush(_HOPS_KEY, json.dumps(seen, default=str))


def _first_time() -> bool:
    from workers.runtime import shared_redis

    return bool(shared_redis().set(_FLAG, os.getpid(), nx=True))


@before_task_publish.connect
def _crash_before_dispatch(sender: str | None = None, **_: Any) -> None:
    if _POINT == "dispatch" and sender == "ai.generate" and _first_time():
        os.kill(os.getpid(), signal.SIGKILL)


_store = result_backend.RedisBackend._write


def _crash_before_store(self: Any, key: Any, value: Any, expires: Any = None) -> None:
    answered = b'"status": "ok"' in value if isinstance(value, bytes) else '"status": "ok"' in value
    if _POINT == "store" and answered and _first_time():
        time.sleep(_DELAY)
        os.kill(os.getpid(), signal.SIGKILL)
    _store(self, key, value, expires)


result_backend.RedisBackend._write = _crash_before_store  # type: ignore[method-assign]

_finish = AttemptBook.finish


def _crash_around_finish(self: AttemptBook, *args: Any, **kwargs: Any) -> Any:
    answered = kwargs.get("answered") is True
    if _POINT == "finish" and answered and _first_time():
        time.sleep(_DELAY)
        os.kill(os.getpid(), signal.SIGKILL)
    reply = _finish(self, *args, **kwargs)
    if _POINT == "store" and answered and _first_time():
        time.sleep(_DELAY)
        os.kill(os.getpid(), signal.SIGKILL)
    return reply


AttemptBook.finish = _crash_around_finish  # type: ignore[method-assign]


@task_postrun.connect
def _crash_before_ack(task: Any = None, retval: Any = None, **_: Any) -> None:
    answered = isinstance(retval, dict) and retval.get("status") == "ok"
    ours = _POINT == "ack" and getattr(task, "name", "") == "ai.generate"
    if ours and answered and _first_time():
        time.sleep(_DELAY)
        os.kill(os.getpid(), signal.SIGKILL)
