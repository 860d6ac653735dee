"""Every worker sights the lanes it consumes once a second (:mod:`aipool.backlog`).

So a message waiting in a lane is stamped, on Redis's clock, within about a second of reaching
either end of its list, whether or not Prometheus scrapes: the router counts a request's deadline
from that stamp, and the age gauges read it. The sighting runs on the worker parent's event loop
timer (no thread); one that fails (Redis away) is logged at debug and tried again a second later.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready

from aipool.backlog import broker_client, sight

log = logging.getLogger("aipool.workers")

#: Seconds between two sightings of a worker's lanes.
SIGHT_EVERY_S = 1.0


def consumed_lanes(consumer: Any) -> list[str]:
    """The pool's lanes a worker consumes (Celery's default queue included, as the router's)."""
    queues = consumer.app.amqp.queues
    return sorted(q for q in (queues.consume_from or queues) if q != "maintenance")


def _sight_lanes(sender: Any = None, **_: Any) -> None:
    timer = getattr(sender, "timer", None)
    client = broker_client()
    if timer is None or client is None:
        return
    lanes = consumed_lanes(sender)

    def tick() -> None:
        try:
            sight(client, lanes)
        except Exception as exc:  # never a reason for the worker to stop
            log.debug("lanes not sighted: %s", type(exc).__name__)

    timer.call_repeatedly(SIGHT_EVERY_S, tick)


def connect() -> None:
    """Start sighting the lanes' waiting messages when the worker is ready (``workers.app``)."""
    worker_ready.connect(_sight_lanes)
