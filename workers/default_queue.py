"""Misrouted requests are served: the router worker also reads Celery's default queue.

A producer that sends ``ai.generate`` without ``queue="router"`` puts it on Celery's default queue
(``celery``), which no pool queue is. The worker that consumes ``router`` consumes that queue too,
runs the request as the router would, and warns, naming the queue producers should use, at most
once a minute with how many arrived meanwhile (a misconfigured producer must not flood the log).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.signals import celeryd_after_setup, task_received
from kombu.entity import Exchange, Queue

log = logging.getLogger("aipool.workers")

#: The queue, exchange and routing key a stock Celery producer uses when none is given.
CELERY_DEFAULT_QUEUE = "celery"
ROUTER_QUEUE = "router"
WARN_EVERY_S = 60.0


def default_queue() -> Queue:
    """Celery's default queue as a stock producer declares it (direct exchange ``celery``)."""
    return Queue(
        CELERY_DEFAULT_QUEUE,
        Exchange(CELERY_DEFAULT_QUEUE, type="direct"),
        routing_key=CELERY_DEFAULT_QUEUE,
    )


def serve_default_queue(instance: Any = None, **_: Any) -> None:
    """Add Celery's default queue to a worker that consumes ``router``."""
    if instance is None:
        return
    queues = instance.app.amqp.queues
    consuming = set(queues.consume_from or queues)
    if ROUTER_QUEUE in consuming and CELERY_DEFAULT_QUEUE not in consuming:
        queues.select_add(default_queue())


class MisrouteWarning:
    """Counts requests that came through the default queue and warns at most every ``every_s``."""

    def __init__(self, every_s: float = WARN_EVERY_S, clock: Any = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self.unreported = 0
        self.last_warned: float | None = None

    def seen(self, task_name: str) -> None:
        self.unreported += 1
        now = self.clock()
        if self.last_warned is not None and now - self.last_warned < self.every_s:
            return
        log.warning(
            "%d %s message(s) arrived on Celery's default queue %r and were served by the "
            "router; producers must send them with queue=%r",
            self.unreported,
            task_name,
            CELERY_DEFAULT_QUEUE,
            ROUTER_QUEUE,
        )
        self.unreported = 0
        self.last_warned = now


_misroutes = MisrouteWarning()


def warn_misrouted(request: Any = None, **_: Any) -> None:
    """Warn when a task arrived through Celery's default queue."""
    info = getattr(request, "delivery_info", None) or {}
    if info.get("routing_key") == CELERY_DEFAULT_QUEUE:
        _misroutes.seen(str(getattr(request, "name", "task")))


def connect() -> None:
    """Serve the default queue beside ``router``, and warn of what arrives there."""
    celeryd_after_setup.connect(serve_default_queue)
    task_received.connect(warn_misrouted)
