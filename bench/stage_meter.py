"""Stage meters for a worker's pool process (``bench.stage_app``, ``bench.stages``).

Each function named in :data:`POOL_STAGES` or :data:`PLAIN_STAGES` is wrapped where it is looked
up; from ``task_prerun`` to ``task_postrun`` the wall and thread-CPU time spent in each is summed,
and one JSON object per task is pushed to :data:`STAGES_KEY` on the broker's Redis. Imports
nothing of the pool, so the plain Celery baseline's worker stays free of it.

The in-process profile (``bench/run --profile``) runs the same functions hot, one after another;
here they run as a worker runs them, between idle waits for the next message, which on a virtual
machine makes the same Python code cost two to three times more CPU (docs/benchmarks.md).
"""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Callable
from typing import Any

APP_ENV = "AIPOOL_BENCH_STAGES_APP"
STAGES_KEY = "aipool:bench:stages"
#: The whole task as the pool process runs it, from Celery's prerun to its postrun signal.
TASK = "task (prerun to postrun)"

#: (stage, "module:attribute path") timed in the pool's worker, in the order a hop runs them.
POOL_STAGES = (
    ("contract parse", "tasks.generate:parse_request"),
    ("journey id", "tasks.generate:journey_id"),
    ("route decision", "tasks.generate:own_route"),
    ("journey check", "aipool.contract.journey:Journey.received"),
    ("hop set-up (Visit)", "aipool.attempt.visit:Visit.__post_init__"),
    ("admission (begin)", "aipool.attempt.lifecycle:AttemptBook.begin"),
    ("  of which the abandoned-call row", "aipool.attempt.records:HopRecords._abandoned_row"),
    ("call (SDK)", "aipool.providers.ollama:OllamaProvider.complete"),
    # The SDK call inside its time bound (the SIGALRM timer): the bound costs the difference.
    ("call in its time bound", "aipool.attempt.call:within"),
    ("answer event", "aipool.attempt.records:HopRecords._answer_event"),
    ("completion JSON (kept answer)", "aipool.attempt.call:completion_to_json"),
    ("result dict", "aipool.contract.result:answered"),
    ("settle (finish)", "aipool.attempt.lifecycle:AttemptBook.finish"),
    ("ledger rows", "aipool.attempt.records:usage_row"),
    ("hop records (log line, metrics)", "aipool.attempt.records:HopRecords._observe"),
    ("  EVALSHA (begin, finish, result write)", "redis.commands.core:Script.__call__"),
    ("the hop (HopRunner.run)", "aipool.attempt.runner:HopRunner.run"),
    ("result write", "celery.backends.base:Backend.store_result"),
    ("result repr for the parent", "celery.app.trace:saferepr"),
)
#: The same for plain Celery's task: its call and what Celery does around it.
PLAIN_STAGES = (
    ("call (SDK)", "bench.plain_app:call"),
    ("result write", "celery.backends.base:Backend.store_result"),
    ("result repr for the parent", "celery.app.trace:saferepr"),
)

_spent: dict[str, list[float]] = {}
_started: list[float] = []


def timed(label: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, adding its wall and thread-CPU seconds to ``label`` on every call."""

    def meter(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent = _spent.setdefault(label, [0.0, 0.0])
            spent[0] += time.perf_counter() - wall
            spent[1] += time.thread_time() - cpu

    meter.__wrapped__ = function  # type: ignore[attr-defined]
    return meter


def install(stages: tuple[tuple[str, str], ...]) -> None:
    """Wrap each stage's function where it is looked up (a module global or a class attribute)."""
    for label, target in stages:
        module_name, _, path = target.partition(":")
        owner: Any = importlib.import_module(module_name)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        found = owner.__dict__[name] if parents else getattr(owner, name)
        if isinstance(found, classmethod):
            setattr(owner, name, classmethod(timed(label, found.__func__)))
        else:
            setattr(owner, name, timed(label, found))


def started(**_: Any) -> None:
    """``task_prerun``: a task starts with nothing spent."""
    _spent.clear()
    _started[:] = [time.perf_counter(), time.thread_time()]


def ended(client: Any) -> Callable[..., None]:
    """``task_postrun``: push what each stage of the task spent, and the whole task, to Redis."""

    def push(**_: Any) -> None:
        if not _started:
            return
        row = {label: spent for label, spent in _spent.items()}
        row[TASK] = [time.perf_counter() - _started[0], time.thread_time() - _started[1]]
        client.rpush(STAGES_KEY, json.dumps(row))

    return push


def connect(client: Any, stages: tuple[tuple[str, str], ...]) -> None:
    """Time ``stages`` in this process and push every task's times through ``client``."""
    from celery.signals import task_postrun, task_prerun

    install(stages)
    task_prerun.connect(started, weak=False)
    task_postrun.connect(ended(client), weak=False)
