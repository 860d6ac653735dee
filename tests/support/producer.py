"""A producer that knows nothing of aipool: a plain Celery app sending ``ai.generate`` by name.

It is what a service in another repository runs (README, "Sending requests"), pointed at any
Redis: the settings come from ``celeryconfig`` (JSON only, the pool's queues), with the broker and
result backend replaced, so a test can talk to a private Redis while the session's environment
names another.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from celery import Celery
from celery.result import AsyncResult

TASK_NAME = "ai.generate"


@dataclass
class Outcome:
    """What the producer got for one request: the result, or the exception ``get`` raised."""

    task_id: str
    answer: dict[str, Any] | None = None
    error: BaseException | None = None
    #: Monotonic time the answer (or the error) arrived.
    at: float = field(default_factory=time.monotonic)

    @property
    def answered(self) -> bool:
        """A contract result arrived (whatever its status)."""
        return isinstance(self.answer, dict) and "status" in self.answer

    @property
    def status(self) -> str:
        """The answer's status, or the name of the exception ``get`` raised."""
        if self.answered and self.answer is not None:
            return str(self.answer["status"])
        return type(self.error).__name__


class Producer:
    """A Celery app on ``redis_url`` that sends requests to the ``router`` queue.

    A ``sentinel://`` URL needs ``master``, the name the sentinels know the master by: a plain
    Celery producer gives it to kombu and Celery as their ``master_name`` transport option.
    """

    def __init__(
        self, redis_url: str, master: str | None = None, *, pools_backend: bool = False
    ) -> None:
        self.app = Celery("aipool-test-producer", set_as_current=False)
        self.app.config_from_object("celeryconfig")
        self.app.conf.update(broker_url=redis_url, result_backend=redis_url)
        if pools_backend:
            # A Python service sending through the pool's app (``workers.app``, as
            # ``tasks.client`` does) reads results through the pool's result backend.
            from workers.result_backend import install

            install(self.app)
        if master is not None:
            conf = self.app.conf
            conf.update(
                broker_transport_options={**conf.broker_transport_options, "master_name": master},
                result_backend_transport_options={
                    **conf.result_backend_transport_options,
                    "master_name": master,
                },
            )

    def send(self, request: dict[str, Any], **options: Any) -> AsyncResult:
        """Enqueue ``request`` exactly as the README's non-Python producer does."""
        return self.app.send_task(TASK_NAME, kwargs={"request": request}, queue="router", **options)

    def send_task(self, name: str, **options: Any) -> AsyncResult:
        """Send any task by name (e.g. a maintenance task, as beat would)."""
        return self.app.send_task(name, **options)

    def collect(self, results: list[AsyncResult], timeout: float) -> list[Outcome]:
        """Wait for every result, all within one shared ``timeout``; never raises.

        A result that does not arrive in time is an :class:`Outcome` carrying the ``TimeoutError``
        (or the connection error) the producer's ``get`` raised.
        """
        deadline = time.monotonic() + timeout
        outcomes = []
        for result in results:
            left = max(0.1, deadline - time.monotonic())
            try:
                answer = result.get(timeout=left, propagate=True, disable_sync_subtasks=False)
                outcomes.append(Outcome(str(result.id), answer=answer))
            except Exception as exc:
                outcomes.append(Outcome(str(result.id), error=exc))
        return outcomes

    def ping(self, worker: str, timeout: float = 0.5) -> bool:
        """Whether worker ``worker`` answers a control ping."""
        return bool(self.app.control.ping(destination=[worker], timeout=timeout))

    def close(self) -> None:
        """Close the app's broker and backend connections.

        Results still referenced (a ``get`` that timed out) unsubscribe when they are collected;
        with nothing left subscribed they have nothing to do, even once the Redis server is gone.
        """
        consumer = getattr(self.app.backend, "result_consumer", None)
        if consumer is not None:
            consumer.stop()
            consumer.subscribed_to.clear()
            consumer._pubsub = None
        self.app.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
