"""Producer side for Python services that import aipool: route locally, enqueue on the first hop.

Services that cannot import aipool send ``ai.generate`` by name to the ``router`` queue instead
(see the README); both paths give the same route for the same request.

The producer must enqueue where the workers listen, so it never starts a Redis of its own: with
``REDIS_URL`` unset it uses the embedded Redis a running ``aipool demo`` or ``aipool redis``
announced, and without one :func:`submit` raises :class:`~aipool.errors.NoRedis`.
"""

from __future__ import annotations

import uuid
from typing import Any

from celery import Celery
from celery.result import AsyncResult

from aipool.contract import parse_request
from aipool.hop import Forward
from aipool.routing.router import decide
from tasks.generate import TASK_NAME, describe
from workers.runtime import hop_runner


def submit(request: dict[str, Any], *, app: Celery | None = None, **options: Any) -> AsyncResult:
    """Enqueue ``request`` (contract v1) and return the ``AsyncResult`` that gets the final answer.

    The request is validated and routed here, so it goes straight to its first available provider's
    queue, skipping providers whose breaker is open or whose quota is spent. An invalid request
    raises :class:`~aipool.errors.InvalidRequest` at once, before anything is enqueued; no Redis
    to send to (``REDIS_URL`` unset and no embedded Redis running) raises
    :class:`~aipool.errors.NoRedis`.
    ``options`` are passed to Celery's ``send_task`` (``task_id``, ``expires``, ``priority``...).
    """
    if app is None:
        from workers.app import app as default_app

        app = default_app
    parsed = parse_request(request)
    task_id = str(options.pop("task_id", None) or uuid.uuid4())
    step = hop_runner().start(parsed, task_id, decide(parsed), answer_terminal=False)
    if not isinstance(step, Forward):  # answer_terminal=False never answers in the producer
        raise RuntimeError("routing answered a request in the producer")
    return app.send_task(
        TASK_NAME,
        kwargs={"request": request, "journey": step.journey.to_dict()},
        kwargsrepr=describe(step),
        task_id=task_id,
        queue=step.queue,
        routing_key=step.queue,
        **options,
    )
