"""A plain Celery app, the baseline a team would write instead of adopting the pool.

``celery -A bench.plain_app worker -Q plain.first,plain.second`` serves one task the way twenty
lines of a team's own would: the same broker and result backend as the pool, late acks, prefetch
1, JSON, and otherwise Celery's defaults. It imports nothing of ``aipool`` or ``workers``, so
none of the pool's settings, signals, consumer or result backend are in its figures.

- ``plain.generate``: on its first queue it replaces itself once onto the second (the pool's
  router → provider hop), where it makes one call to the simulated Ollama through its SDK;
  sent straight to the second queue it is one hop (the pool's ``submit()``). ``then`` names the
  second queue: ``plain.second``, or ``plain.second.urgent`` for a request sent to the first
  queue's urgent twin, as the pool's urgent requests keep to the urgent lanes (the figures with
  four worker processes on four queues).

Task events (``worker_send_task_events``, ``task_send_sent_event``), which Flower needs, are off
as in Celery's defaults unless ``AIPOOL_BENCH_PLAIN_EVENTS=1``.
"""

from __future__ import annotations

import os
from typing import Any

from celery import Celery, Task

from bench.sdk_calls import call

FIRST = "plain.first"
SECOND = "plain.second"
#: The twins of the two queues, as the pool's urgent lanes are of its routine ones.
FIRST_URGENT = "plain.first.urgent"
SECOND_URGENT = "plain.second.urgent"
TASK_NAME = "plain.generate"
EVENTS_ENV = "AIPOOL_BENCH_PLAIN_EVENTS"

app = Celery(
    "plain",
    broker=os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/14"),
    backend=os.environ.get("CELERY_RESULT_BACKEND", "redis://127.0.0.1:6379/14"),
)


def configure(target: Celery, events: bool) -> None:
    """Give ``target`` the plain baseline's settings, task events on or off."""
    target.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        # Its own queues: the pool's router worker also consumes Celery's default queue.
        task_default_queue=FIRST,
        worker_send_task_events=events,
        task_send_sent_event=events,
        worker_hijack_root_logger=False,
    )


configure(app, os.environ.get(EVENTS_ENV) == "1")


@app.task(name=TASK_NAME, bind=True)
def generate(
    self: Task[Any, Any], request: dict[str, Any], second: bool = False, then: str = SECOND
) -> Any:
    """Replace onto the second queue (``then``), or, there, call the model and answer."""
    if not second:
        return self.replace(
            self.signature(
                kwargs={"request": request, "second": True}, queue=then, routing_key=then
            )
        )
    call("ollama")
    return {"status": "ok", "provider": "ollama"}
