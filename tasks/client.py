"""Producer side for Python services that import aipool: route locally, enqueue on the first hop.

Services that cannot import aipool send ``ai.generate`` by name to the ``router`` queue instead
(see the README); both paths give the same route for the same request.

With the response cache on for a request (:mod:`aipool.cache`), :func:`submit` answers a kept
answer itself: the result is written where its ``AsyncResult`` reads it, and no message is sent.

The producer must enqueue where the workers listen, so it never starts a Redis of its own: with
``REDIS_URL`` unset it uses the embedded Redis a running ``aipool demo`` or ``aipool redis``
announced, and without one :func:`submit` raises :class:`~aipool.errors.NoRedis`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from celery import Celery
from celery.result import AsyncResult

from aipool import tracing
from aipool.attempt.identity import journey_id
from aipool.attempt.visit import Done
from aipool.cache.front import Recheck
from aipool.contract.request import parse_request
from aipool.redis.riding import Rider, riding
from aipool.routing.recall import own_route
from aipool.tracing.setup import configure as configure_tracing
from aipool.tracing.setup import wanted as tracing_wanted
from tasks.generate import TASK_NAME, WAITING_REPR, describe
from workers.edge.withholding import described
from workers.runtime import cache_front, shared_redis


@dataclass(frozen=True)
class Dispatch:
    """A validated, routed request: the message :func:`send` puts on ``queue``."""

    task_id: str
    queue: str
    kwargs: dict[str, Any]
    kwargsrepr: str
    #: An answer the response cache gave: :func:`send` writes it as the result, sends nothing.
    answer: dict[str, Any] | None = None
    #: Seconds before the message is to be taken (an identical request is being answered):
    #: :func:`send` writes its ETA on the pool's clock.
    countdown: float | None = None
    #: The journey id :func:`send` claims ``task_id`` for once the message is sent: set when
    #: :func:`route` minted the id itself.
    unclaimed: str | None = None


def route(request: dict[str, Any], *, task_id: str | None = None) -> Dispatch:
    """Validate and route ``request`` (contract v1): which queue its first hop goes to.

    A request without a deadline goes to its chain's first provider unless that breaker was
    seen open in the last second; any other request is routed by the pool, which skips providers
    whose breaker is open or whose quota is spent now (:meth:`HopRunner.dispatch`). Every skip
    is recorded, wherever it happens, as the pool records every hop. Raises :class:`~aipool.errors.InvalidRequest` for a malformed
    request and :class:`~aipool.errors.NoRedis` when there is no Redis to read breakers from.

    A ``task_id`` the caller gives is claimed for this request before anything is decided
    (:mod:`aipool.attempt.task_ids`): one that names another request is refused here. An id
    minted here (a fresh ``uuid4``) names nothing yet, so its claim waits for :func:`send`,
    after the message: a round trip to Redis fewer between the call and the message
    (docs/benchmarks.md, "One request's Redis commands in time").
    """
    parsed = parse_request(request)
    request_id = str(task_id or uuid.uuid4())
    journey = journey_id(request_id, request)
    step = cache_front().dispatch(
        parsed, request_id, journey, own_route(parsed), claim=task_id is not None
    )
    unclaimed = None if task_id is not None else journey
    if isinstance(step, Done):  # the response cache's answer
        return Dispatch(request_id, "", {}, "", answer=step.result, unclaimed=unclaimed)
    if isinstance(step, Recheck):  # by name to the router, once the identical one is answered
        return Dispatch(
            request_id,
            step.queue,
            {"request": request},
            WAITING_REPR,
            countdown=step.delay_s,
            unclaimed=unclaimed,
        )
    return Dispatch(
        task_id=request_id,
        queue=step.queue,
        kwargs={"request": request, "journey": step.journey.to_dict()},
        kwargsrepr=describe(step),
        unclaimed=unclaimed,
    )


def send(dispatch: Dispatch, *, app: Celery | None = None, **options: Any) -> AsyncResult[Any]:
    """Enqueue a routed request; ``options`` go to Celery's ``send_task`` (``expires``,
    ``priority``...). Returns the ``AsyncResult`` that gets the final answer, once the task id
    is claimed for the request (:attr:`Dispatch.unclaimed`)."""
    app = app or _default_app()
    if dispatch.answer is not None:
        app.backend.store_result(dispatch.task_id, dispatch.answer, "SUCCESS")
        _claim(dispatch, app)
        return AsyncResult(dispatch.task_id, app=app)
    if dispatch.countdown is not None and not {"countdown", "eta"} & options.keys():
        # On the pool's clock, as the workers' own rechecks (tasks.generate._forward).
        options["eta"] = cache_front().runner.eta(dispatch.countdown)
    headers = {**(options.pop("headers", None) or {}), **described()}
    with _claim_riding(dispatch) as rider:
        sent = app.send_task(
            TASK_NAME,
            kwargs=dispatch.kwargs,
            kwargsrepr=dispatch.kwargsrepr,
            task_id=dispatch.task_id,
            queue=dispatch.queue,
            routing_key=dispatch.queue,
            headers=headers,
            **options,
        )
    _claim(dispatch, app, rider)
    return sent


@contextmanager
def _claim_riding(dispatch: Dispatch) -> Iterator[Rider | None]:
    """The claim of the task id :func:`route` minted, offered to the message's own round trip
    (:mod:`aipool.redis.riding`; the pool's transport takes it where the message goes to the
    attempts' Redis)."""
    if dispatch.unclaimed is None:
        yield None
        return
    with riding(cache_front().runner.claim_rider(dispatch.task_id, dispatch.unclaimed)) as rider:
        yield rider


def _claim(dispatch: Dispatch, app: Celery, rider: Rider | None = None) -> None:
    """Claim the task id :func:`route` minted, with its message (``rider``) or now it is out,
    and before anyone is handed the id. Nobody could hold an id minted a moment ago, short of
    reading it off the queue in between: should the claim find another request there all the
    same, the id's result is its refusal, written over whatever it holds (``store_result.lua``),
    as for any reused id."""
    if dispatch.unclaimed is None:
        return
    refused = cache_front().runner.reused(dispatch.task_id, dispatch.unclaimed, rider)
    if refused is not None:
        app.backend.store_result(dispatch.task_id, refused.result, "SUCCESS")


def submit(
    request: dict[str, Any], *, app: Celery | None = None, **options: Any
) -> AsyncResult[Any]:
    """Enqueue ``request`` (contract v1) and return the ``AsyncResult`` that gets the final answer.

    The request is validated and routed here (:func:`route`), so it goes straight to its first
    available provider's queue, skipping providers whose breaker is open or whose quota is spent.
    An invalid request raises :class:`~aipool.errors.InvalidRequest` at once, before anything is
    enqueued; no Redis to send to (``REDIS_URL`` unset and no embedded Redis running) raises
    :class:`~aipool.errors.NoRedis`. ``options`` are passed to Celery's ``send_task``
    (``task_id``, ``expires``, ``priority``...). When the pool traces, the send is the first span
    of the request's trace (:mod:`aipool.tracing`).
    """
    _trace_producer()
    with tracing.span("aipool.submit"):
        return send(route(request, task_id=options.pop("task_id", None)), app=app, **options)


_traced = False


def _trace_producer() -> None:
    # Once per producer process: a producer that traces (AIPOOL_OTLP_ENDPOINT) starts the trace.
    global _traced
    if not _traced:
        _traced = True
        if tracing_wanted():
            configure_tracing("producer", redis_client=shared_redis())


def _default_app() -> Celery:
    # deferred: a producer that passes its own Celery app never loads the pool's (workers.app needs REDIS_URL at import)
    from workers.app import app

    return app
