"""A worker that serves one lane of a queue and not the other says so at start.

Every pool queue has a routine lane and an urgent lane (:mod:`aipool.lanes`). A deployment that
lists its queues itself the way Celery's habits suggest (``-Q router,ollama,gemini,claude``)
consumes no urgent lane, and urgent requests (alert triage, ``critical``, short deadlines) wait
there for ever (issue #40). When a worker is ready it asks the running workers which queues they
consume; for each lane it serves whose sibling lane nobody consumes, it logs one warning naming the
lane and the command that serves every lane. The question runs in a thread, so the start is not
held up; a worker that cannot ask says nothing (``aipool status`` shows each lane's consumers).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from celery.signals import worker_ready

from aipool.lanes import MAINTENANCE, QUEUES, is_urgent_lane, queue_of, urgent_lane

log = logging.getLogger("aipool.workers")

#: What a worker logs when each lane it consumes has its sibling served.
SERVED = "lanes: the other lane of every lane this worker consumes has a consumer"
#: How long the running workers have to say which queues they consume.
ASK_TIMEOUT_S = 2.0


def sibling(lane: str) -> str:
    """The other lane of ``lane``'s queue (``ollama`` ↔ ``ollama.urgent``)."""
    return queue_of(lane) if is_urgent_lane(lane) else urgent_lane(lane)


def unserved_siblings(mine: Iterable[str], consumed: Iterable[str]) -> list[tuple[str, str]]:
    """``(lane, sibling)`` for each pool lane in ``mine`` whose sibling is not in ``consumed``
    (the queues every running worker consumes, this one's included)."""
    everyone = set(consumed) | set(mine)
    pairs = []
    for lane in sorted(set(mine)):
        if lane not in QUEUES or lane == MAINTENANCE:
            continue
        other = sibling(lane)
        if other not in everyone:
            pairs.append((lane, other))
    return pairs


def warning(lane: str, other: str) -> str:
    """The line a worker logs for a lane whose sibling no worker consumes."""
    kind = "urgent" if is_urgent_lane(other) else "routine"
    return (
        f"this worker consumes {lane} but no running worker consumes {other}: {kind} requests "
        f"for {queue_of(lane)} wait there until one does; run `aipool worker`, or add {other} "
        f"to a worker's -Q (every queue: -Q {','.join(QUEUES)})"
    )


def check(app: Any, mine: Iterable[str]) -> None:
    """Ask the running workers what they consume, and warn for each unserved sibling lane."""
    try:
        # A connection of its own, closed here: one borrowed from the app's pool would stay in
        # it, idle, in this (parent) process, and every pool child forked later (after one
        # died) inherited it and hung closing it at start ("Timed out waiting for UP message",
        # every child after a SIGKILLed one; tests/reliability/test_crash_recovery.py).
        with app.connection_for_write() as connection:
            inspector = app.control.inspect(timeout=ASK_TIMEOUT_S, connection=connection)
            replies = inspector.active_queues() or {}
    except Exception:  # the broker is away: aipool status and the alerts say what is unserved
        log.debug("could not ask the workers which queues they consume", exc_info=True)
        return
    consumed = {q.get("name", "") for queues in replies.values() for q in queues or ()}
    unserved = unserved_siblings(mine, consumed)
    for lane, other in unserved:
        log.warning(warning(lane, other))
    if not unserved:
        log.info(SERVED)


def _on_ready(sender: Any = None, **_: Any) -> None:
    consumer = sender
    app = getattr(consumer, "app", None)
    queues = getattr(getattr(consumer, "task_consumer", None), "queues", None)
    if app is None or queues is None:
        return
    mine = [queue.name for queue in queues]
    threading.Thread(target=check, args=(app, mine), name="aipool-lanes", daemon=True).start()


def connect() -> None:
    """Check the lanes' consumers once each worker is ready."""
    worker_ready.connect(_on_ready)
