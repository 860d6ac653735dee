"""``ai.generate``: the one inference task, re-dispatched hop by hop with ``Task.replace``.

Whatever happens inside a hop, the producer's ``AsyncResult`` gets a contract result (v1), never a
Celery FAILURE: malformed input and forged journeys come back as ``status: "error"``; a bug, the
soft time limit or a broker that cannot take the next hop end in ``error`` with a code; the hard
time limit, which kills the process, is answered by the worker's parent (:class:`AnsweringRequest`).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from celery.exceptions import Ignore, SoftTimeLimitExceeded, TimeLimitExceeded
from celery.signals import task_postrun
from celery.utils.time import maybe_iso8601, maybe_make_aware
from celery.worker.state import task_ready
from redis.exceptions import RedisError

from aipool import lanes
from aipool.attempt import result_write, soft_limit
from aipool.attempt.identity import journey_id
from aipool.attempt.layout import answer_key, replay_key
from aipool.attempt.lifecycle import answer_keep_s
from aipool.attempt.visit import Done, Drop, Forward
from aipool.backlog import broker_client, first_seen
from aipool.cache.front import Recheck
from aipool.contract import result
from aipool.contract.journey import Journey
from aipool.contract.request import Request, parse_request
from aipool.contract.route import Route
from aipool.errors import InvalidJourney, InvalidRequest
from aipool.routing.recall import own_route
from aipool.routing.router import routed_priority
from aipool.settings import settings
from workers.edge.withholding import GENERATE, described
from workers.messages import AnswerWithheldRequest
from workers.result_backend import finish_writer
from workers.runtime import cache_front, header_number, shared_redis

log = logging.getLogger("aipool.tasks")

TASK_NAME = GENERATE
#: The header every message the pool sends on carries its producer's expiry in (epoch seconds),
#: where the producer set Celery's ``expires`` (:func:`_forward`). An earlier release's worker
#: ignores it, and calls that hop's provider however late (it revoked the message before).
EXPIRES_AT_HEADER = "aipool_expires_at"
#: Characters of an answer's repr the tracer hands the worker's parent when events do not show
#: answers (one: the repr is an ellipsis, "{, ...}"); when they do, Celery's own default.
ANSWER_REPR_WITHHELD = 1


class AnsweringRequest(AnswerWithheldRequest):
    """A request whose hard time limit is answered with a contract result instead of FAILURE, and
    whose task events carry no answer (:class:`~workers.messages.AnswerWithheldRequest`).

    The hard limit kills the pool process running the hop, so the answer can only come from the
    worker's parent, here. It is stored instead of Celery's FAILURE: the producer reads
    ``status: "error"``, code ``time_limit``, and the message is acked as Celery would.

    Unless the hop got its answer before it was killed (``finish`` ran, the answer is kept beside
    its attempt, and the process died writing the result): then the message goes back on its
    queue, and the next delivery returns that kept answer (``begin`` replies with it) with the
    journey's trail, as after a worker lost mid-write. Storing ``time_limit`` there lost a paid
    answer the pool held (issue #42). Once per journey (:func:`~aipool.attempt.layout.replay_key`).
    """

    @property
    def time_limits(self) -> tuple[float | None, float | None]:
        """The hop's (hard, soft) time limits: always the pool's (the task's, from
        ``AIPOOL_TASK_TIME_LIMIT`` and ``AIPOOL_TASK_SOFT_TIME_LIMIT``), whatever the message
        asks. A producer's ``soft_time_limit`` fired inside a provider's call and was booked as
        that provider's timeout: five requests opened a healthy Gemini's breaker (issue #42).
        A producer that wants an answer in time says ``deadline_s``, which the chain shares."""
        return (None, None)

    @time_limits.setter
    def time_limits(self, asked: Any) -> None:
        if asked and any(asked):
            log.debug(
                "request_id=%s: the message's time limits %s are not the hop's", self.id, asked
            )

    def on_timeout(self, soft: bool, timeout: float) -> None:
        if soft:
            super().on_timeout(soft, timeout)
            return
        log.error("hard time limit (%ss) passed for request_id=%s", timeout, self.id)
        if self._replays_kept_answer():
            return  # its message goes back on its queue once the pool reports the failure
        self._answer_time_limit(timeout)

    def on_failure(
        self, exc_info: Any, send_failed_event: bool = True, return_ok: bool = False
    ) -> None:
        exc = getattr(exc_info, "exception", None)
        exc = getattr(exc, "exc", exc)  # the pool wraps it in an ExceptionWithTraceback
        if not isinstance(exc, TimeLimitExceeded):
            super().on_failure(exc_info, send_failed_event, return_ok)
            return
        # The pool reports the killed hop as failed too: ack it as Celery would, and keep the
        # contract answer in place of the FAILURE Celery would store.
        task_ready(self)
        if self._replays_kept_answer():
            log.warning("request_id=%s: its answer was recorded; delivered again for it", self.id)
            self.reject(requeue=True)
            return
        if self.task.acks_late and self.task.acks_on_failure_or_timeout:
            self.acknowledge()
        self._answer_time_limit(exc.args[0] if exc.args else None)

    def _replays_kept_answer(self) -> bool:
        """Whether this killed hop's message goes back on its queue for the answer its attempt
        kept (decided once: the timeout and the pool's failure report both ask)."""
        decided: bool | None = getattr(self, "_replay", None)
        if decided is None:
            decided = bool(self.task.acks_late) and kept_answer_replayable(self.id, self.kwargs)
            self._replay = decided
        return decided

    def _answer_time_limit(self, timeout: Any) -> None:
        limit = f" within {timeout:g} s" if isinstance(timeout, int | float) else ""
        try:
            self.task.backend.store_result(
                self.id,
                result.error(self.id, "time_limit", f"the hop did not finish{limit}"),
                "SUCCESS",
                request=self._context,  # type: ignore[attr-defined]  # Request's, not in celery-types' stub
            )
        except Exception:
            log.exception("time-limit answer not stored for request_id=%s", self.id)


def kept_answer_replayable(request_id: str, kwargs: Any) -> bool:
    """Whether the hop ``kwargs`` (a message's) names has its answer kept beside its attempt, and
    no earlier hard kill of this journey was given back for it already."""
    try:
        journey = kwargs["journey"]
        hop = journey["route"]["chain"][int(journey["position"])]
        name = journey_id(request_id, kwargs["request"])
        kept = answer_key(name, str(hop["provider"]))
    except (KeyError, TypeError, ValueError, IndexError):
        return False  # the router's hop, or a malformed message: no call was made
    client = shared_redis()
    try:
        if not client.exists(kept):
            return False
        return bool(client.set(replay_key(name), 1, nx=True, ex=answer_keep_s()))
    except RedisError:
        log.warning("request_id=%s: no kept answer looked up (Redis failed)", request_id)
        return False


class GenerateTask(Task[Any, Any]):
    """The task class of ``ai.generate``: its hard time limit answers the producer."""

    Request = AnsweringRequest  # type: ignore[assignment]  # the stub types Task.Request as a str (a name Celery also takes)

    @property
    def resultrepr_maxsize(self) -> int:  # type: ignore[override]  # a plain attribute in the stub; Celery reads it per answer
        """How much of an answer Celery's tracer formats for the worker's parent: all of Celery's
        1 KB only when task events may show answers.

        The parent puts that repr in the task-succeeded event and nowhere else (the success log
        line shows no return value, ``workers/signals.py``), and the event withholds the answer
        unless ``AIPOOL_FLOWER_SHOWS_ANSWERS`` is on. Formatting 1 KB of a contract result took
        ~0.37 ms of CPU per answered hop, more than routing it (docs/benchmarks.md, #23).
        """
        if settings().flower_shows_answers:
            return int(Task.resultrepr_maxsize)
        return ANSWER_REPR_WITHHELD


@shared_task(name=TASK_NAME, bind=True, base=GenerateTask)
def generate(
    self: GenerateTask, /, *args: Any, request: Any = None, journey: Any = None, **extra: Any
) -> Any:
    """Answer ``request`` (contract v1) or pass it to the next provider's queue.

    Without ``journey`` the request is new (sent by name to the ``router`` queue): it is routed and
    dispatched to the first provider that can take it. With ``journey`` this worker runs the hop the
    journey points at, after checking that routing could have produced it.
    """
    request_id = str(self.request.id)
    soft_limit.release()  # a hop before this one of this process may have held it
    if args:
        return result.error(
            request_id,
            "positional_arguments",
            'ai.generate takes keyword arguments only: kwargs={"request": {...}}',
        )
    if extra:
        return result.error(
            request_id, "unknown_argument", f"unexpected arguments: {', '.join(sorted(extra))}"
        )
    try:
        parsed = parse_request(request)
        queue = (self.request.delivery_info or {}).get("routing_key")
        # An answer's finish writes the producer's result too, where the backend allows it.
        expires = expires_at(self.request)
        with result_write.writing(finish_writer(self)):
            step = _hop(
                request_id, parsed, journey_id(request_id, request), journey, queue, expires
            )
        # The hop has its outcome: writing it (the result, or the next hop's message) must not
        # be cut by a soft limit that arrives late (aipool/attempt/soft_limit.py: a hop that
        # made a call holds it already, from its finish on).
        soft_limit.hold()
    except InvalidRequest as exc:
        return result.error(request_id, exc.code, exc.message)
    except InvalidJourney as exc:
        return result.error(request_id, "invalid_journey", str(exc))
    except SoftTimeLimitExceeded:
        log.error("soft time limit passed for request_id=%s", request_id)
        return result.error(request_id, "time_limit", "the hop did not finish in time")
    except Exception:
        # A bug must cost one request a clear error, never the producer's wait or the worker.
        log.exception("hop failed for request_id=%s", request_id)
        return result.error(request_id, "internal_error", "the pool failed to serve this hop")
    if isinstance(step, Done):
        return step.result
    if isinstance(step, Drop):
        # The attempt was answered long ago (its answer is no longer kept): the producer's
        # result was written then; this delivery acknowledges the message and writes nothing.
        log.info("request_id=%s delivered again: %s", request_id, step.reason)
        raise Ignore()
    return _forward(self, request, step)


def _hop(
    request_id: str,
    parsed: Request,
    name: str,
    journey: Any,
    queue: str | None,
    expires: float | None = None,
) -> Done | Forward | Drop | Recheck:
    front = cache_front()
    # The route is this worker's own: what a message says of it decides nothing. Remembered per
    # process for the same inputs, table and model (aipool.routing.recall): the same decision.
    route = own_route(parsed)
    if journey is None:
        # Sent by name: a deadline counts from when the pool first saw it waiting, so time in the
        # router's queue counts against it (issue #29); without one it may go straight on.
        return front.dispatch(
            parsed,
            request_id,
            name,
            route,
            answer_terminal=True,
            seen_at=lambda: _first_seen(queue, request_id),
            expired=front.runner.expired(expires),
        )
    try:
        received = Journey.received(journey, name, route, queue)
        _check_lane(parsed, route, queue)
    except InvalidJourney as exc:
        log.warning("request_id=%s refused on queue %s: %s", request_id, queue, exc)
        raise
    if received.hop.terminal:
        # A message positioned at the terminal answer: the route record (made when the pool first
        # saw the request) says whether every provider was passed over; a forged one is routed.
        return front.runner.start(
            parsed, request_id, name, route, expired=front.runner.expired(expires)
        )
    # The hop reads the expiry itself: passed, it calls no one; passing mid-call, it cuts the call.
    return front.run(parsed, request_id, received, expires_at=expires)


def _first_seen(queue: str | None, request_id: str) -> float | None:
    """When the pool first saw this message waiting in ``queue`` (:mod:`aipool.backlog`)."""
    client = broker_client()
    if client is None or queue is None:
        return None
    try:
        return first_seen(client, queue, request_id)
    except RedisError:
        return None  # counted from now: routing itself will meet the outage and say so


def _check_lane(parsed: Request, route: Route, queue: str | None) -> None:
    """Urgent provider lanes carry urgent requests only (:mod:`aipool.lanes`): a routine
    request there would jump the line routine work waits in."""
    if queue is None or not lanes.is_urgent_lane(queue):
        return
    if not lanes.is_urgent(parsed, route.intent, routed_priority(parsed)):
        raise InvalidJourney(f"a routine request arrived on the urgent lane {queue}")


def _forward(task: Task[Any, Any], request: Any, step: Forward | Recheck) -> Any:
    """Same task id on the next queue: the producer's AsyncResult resolves to the last hop's
    result. The message keeps what its producer asked of it (priority, expiry), not its time
    limits: the pool's settings own every hop's. The expiry rides in the pool's header
    (:data:`EXPIRES_AT_HEADER`), not as Celery's ``expires``: a worker revokes a message whose
    ``expires`` has passed, and a request the pool had begun then ended in ``TaskRevokedError``
    (its calls perhaps paid for) instead of the chain's answer.

    A :class:`Recheck` goes back by name to the router, without a journey (an identical request
    is fetching its answer: it looks in the response cache again when it arrives).

    A step with a delay is sent with its ETA on the pool's clock (:meth:`HopRunner.eta`); the
    worker that takes it waits for that instant on its own (``workers/edge/eta.py``)."""
    options = carried_options(task.request)
    if step.delay_s:
        # On the pool's clock, not as a countdown Celery would add to this host's (issue #42).
        options["eta"] = cache_front().runner.eta(step.delay_s)
    journey = step.journey if isinstance(step, Forward) else None
    kwargs: dict[str, Any] = {"request": request}
    if journey is not None:
        kwargs["journey"] = journey.to_dict()
    signature = task.signature(
        kwargs=kwargs,
        queue=step.queue,
        routing_key=step.queue,
        kwargsrepr=describe(step) if isinstance(step, Forward) else WAITING_REPR,
        headers=_hop_headers(task.request),
        **options,
    )
    try:
        return task.replace(signature)
    except Ignore:
        raise
    except Exception:
        log.exception("request_id=%s not dispatched to %s", task.request.id, step.queue)
        return result.error(
            str(task.request.id),
            "dispatch_failed",
            f"the request could not be queued for {step.queue}",
            journey,
        )


def _hop_headers(context: Any) -> dict[str, Any]:
    """The headers of a message the pool sends on: described (:func:`describe`), and the
    producer's expiry, if it set one."""
    headers = described()
    expires = expires_at(context)
    if expires is not None:
        headers[EXPIRES_AT_HEADER] = expires
    return headers


def expires_at(context: Any) -> float | None:
    """When the request's messages expire (epoch seconds), or ``None``: the pool's header on a hop
    after the first, Celery's ``expires`` (ISO 8601; naive is UTC) on the producer's own."""
    carried = header_number(context, EXPIRES_AT_HEADER)
    if carried is not None:
        return carried
    expires = getattr(context, "expires", None)
    if not expires:
        return None
    try:
        when = maybe_iso8601(expires)
    except (TypeError, ValueError):
        return None  # Celery's own request refuses such a message before the task runs
    return None if when is None else maybe_make_aware(when).timestamp()


# The soft limit is taken back once the task has ended, its result written.
task_postrun.connect(soft_limit.release, weak=False)

#: What Flower shows of a request waiting for an identical one's answer.
WAITING_REPR = "{'cache': 'waiting for an identical request'}"


def describe(step: Forward) -> str:
    """What Flower and the task events show of a message: where it is, never the prompt.

    Sent with the :func:`~workers.edge.withholding.described` headers, so the edge keeps it."""
    journey = step.journey
    return (
        f"{{'intent': {journey.route.intent!r}, 'hop': {journey.position}, "
        f"'provider': {journey.hop.provider!r}, 'model': {journey.hop.model!r}}}"
    )


def carried_options(context: Any) -> dict[str, Any]:
    """The producer's message options a re-dispatch must keep (Celery's replace drops them);
    its expiry goes in a header (:func:`_hop_headers`)."""
    options: dict[str, Any] = {}
    priority = (getattr(context, "delivery_info", None) or {}).get("priority")
    if priority is not None:
        options["priority"] = priority
    # Not its time limits: every hop runs under the pool's own (AnsweringRequest), so a
    # producer's limit cannot cut a provider's call short and be booked as the provider's fault.
    return options
