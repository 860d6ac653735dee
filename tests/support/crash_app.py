"""The pool's Celery app with a crash planted at one point of a hop (tests only).

``celery -A tests.support.crash_app worker`` serves exactly like ``workers.app``, except that the
first time the point named by ``AIPOOL_TEST_CRASH_AT`` is reached, the pool process SIGKILLs itself,
the way the OOM killer would:

- ``dispatch``: a hop's call has ended and the hop is about to publish the next hop's message;
- ``ack``: a hop answered and its result is stored, but the message is not acked yet.

"First time" is pool-wide: a key in Redis (``AIPOOL_TEST_CRASH_FLAG``) is set when it fires.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from celery.signals import before_task_publish, task_postrun

from workers.app import app

__all__ = ["app"]

_POINT = os.environ.get("AIPOOL_TEST_CRASH_AT", "")
_FLAG = os.environ.get("AIPOOL_TEST_CRASH_FLAG", "aipool:test:crashed")


def _first_time() -> bool:
    from workers.runtime import shared_redis

    return bool(shared_redis().set(_FLAG, os.getpid(), nx=True))


@before_task_publish.connect
def _crash_before_dispatch(sender: str | None = None, **_: Any) -> None:
    if _POINT == "dispatch" and sender == "ai.generate" and _first_time():
        os.kill(os.getpid(), signal.SIGKILL)


@task_postrun.connect
def _crash_before_ack(task: Any = None, retval: Any = None, **_: Any) -> None:
    answered = isinstance(retval, dict) and retval.get("status") == "ok"
    ours = _POINT == "ack" and getattr(task, "name", "") == "ai.generate"
    if ours and answered and _first_time():
        os.kill(os.getpid(), signal.SIGKILL)
