"""Once a hop has its outcome, the soft time limit no longer interrupts it.

The soft limit (billiard's ``SIGUSR1`` in the pool process) exists so that a hop stuck in its
work gives up and moves on. Once the hop has its outcome, what is left is writing it: the next
hop's message, or the result and its usage records. The limit landing there loses the outcome: a
paid answer stored as a Celery ``FAILURE``. It does land there: the worker's parent times the
limit in its own loop, and a Redis that stalled that loop delivers it late, when Redis answers
again and the hop is writing its result (issue #42). So from the moment the hop has its outcome
(the runner's ``finish`` returned, before the latency sample and the observers: a late signal
landing in either lost the answer, one run in three here; ``ai.generate`` holds it again, for hops
that end without a call) until the task has ended (``task_postrun``, after the result's write) the signal is ignored; the
next hop of this process, at the latest, takes it back. The hard limit is untouched.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_SOFT = getattr(signal, "SIGUSR1", None)
#: The handler put aside while a hop writes its outcome (None: nothing is held).
_held: list[Any] = []


def _may_handle() -> bool:
    # Only a process's main thread may set handlers (the prefork and solo pools run tasks there).
    return _SOFT is not None and threading.current_thread() is threading.main_thread()


def hold() -> None:
    """The hop has its outcome: the soft limit no longer interrupts this task."""
    if _held or not _may_handle():
        return
    previous = signal.signal(_SOFT, signal.SIG_IGN)  # type: ignore[arg-type]
    _held.append(signal.SIG_DFL if previous is None else previous)


def release(*_: Any, **__: Any) -> None:
    """Give the soft limit back its handler (a task's end, or the next hop's start)."""
    if not _held or not _may_handle():
        return
    signal.signal(_SOFT, _held.pop())  # type: ignore[arg-type]
