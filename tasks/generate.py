"""``ai.generate``: the one inference task, re-dispatched hop by hop with ``Task.replace``."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task

from aipool import result
from aipool.contract import parse_request
from aipool.errors import InvalidRequest
from aipool.hop import Done
from aipool.journey import Journey
from aipool.routing.router import decide
from workers.runtime import hop_runner

log = logging.getLogger("aipool.tasks")


@shared_task(name="ai.generate", bind=True)
def generate(
    self: Task, request: Any = None, journey: dict[str, Any] | None = None, **extra: Any
) -> Any:
    """Answer ``request`` (contract v1) or pass it to the next provider's queue.

    Without ``journey`` the request is new (sent by name to the ``router`` queue): it is routed and
    dispatched to the first provider that can take it. With ``journey`` this worker runs the hop the
    journey points at.
    """
    request_id = str(self.request.id)
    if extra:
        return result.error(
            request_id, "unknown_argument", f"unexpected arguments: {', '.join(sorted(extra))}"
        )
    try:
        parsed = parse_request(request)
    except InvalidRequest as exc:
        return result.error(request_id, exc.code, exc.message)
    runner = hop_runner()
    if journey is None:
        step = runner.start(parsed, request_id, decide(parsed))
    else:
        try:
            trip = Journey.from_dict(journey)
        except (KeyError, TypeError, ValueError, IndexError):
            return result.error(request_id, "invalid_journey", "the journey field is malformed")
        step = runner.run(parsed, request_id, trip)
    if isinstance(step, Done):
        return step.result
    # Same task id on the next queue: the producer's AsyncResult resolves to the last hop's result.
    signature = generate.signature(
        kwargs={"request": request, "journey": step.journey.to_dict()},
        queue=step.queue,
        routing_key=step.queue,
    )
    return self.replace(signature)
