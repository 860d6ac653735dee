"""A pool process's garbage: the reference cycles Celery leaves behind, reclaimed as it goes.

Every ``Task.replace`` raises ``Ignore``, and Celery's tracer keeps the exception and an
``ExceptionInfo`` of it in the frame of the running task: a reference cycle through the
traceback, the task's frames and their locals (about 250 KB per re-dispatched hop). Only a full
collection frees it, and CPython runs one only once a quarter as many objects as the heap's
long-lived ones have piled up: with the provider SDKs loaded, a pool process grew by hundreds of
megabytes before one came, and that collection then took ~50 ms out of some request's latency.

So a process, once warm (its first tasks have loaded the SDK and built its clients), collects
once and freezes what is left (``gc.freeze``: moved out of every later collection, and no
longer counted against its thresholds), then collects after every few tasks. A collection then
scans only what the last tasks allocated: well under a millisecond.
"""

from __future__ import annotations

import gc
from typing import Any

from celery.signals import task_postrun

#: Tasks a process serves before it freezes what it has built.
WARM_AFTER_TASKS = 20
#: Tasks between two collections once frozen (the cycles of at most this many hops wait).
COLLECT_EVERY_TASKS = 20


class Reclaimer:
    """Counts the tasks of one process and collects on the schedule above."""

    def __init__(self, warm_after: int = WARM_AFTER_TASKS, every: int = COLLECT_EVERY_TASKS):
        self.warm_after = warm_after
        self.every = every
        self.tasks = 0

    def task_ended(self) -> None:
        self.tasks += 1
        if self.tasks == self.warm_after:
            gc.collect()
            gc.freeze()
        elif self.tasks > self.warm_after and self.tasks % self.every == 0:
            gc.collect()


_RECLAIMER = Reclaimer()


def _reclaim(**_: Any) -> None:
    _RECLAIMER.task_ended()


def connect() -> None:
    """Reclaim each task's garbage in the pool processes (``workers.app`` calls it once)."""
    task_postrun.connect(_reclaim)
