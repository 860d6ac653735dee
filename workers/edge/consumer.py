"""The worker's consumer with the edge in front of its task message handler.

A refused message is answered (when someone waits for it), rejected without requeue and logged on
one line (:mod:`workers.edge`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import states
from celery.worker.consumer import Consumer
from kombu.serialization import prepare_accept_content

from aipool.contract import result
from workers.edge.eta import EtaOnHost
from workers.edge.inspection import Refusal, inspect_message, log_refusal, refusal_of, shown
from workers.edge.transport import RedisTransport
from workers.edge.withholding import withhold_prompt
from workers.runtime import shared_redis

log = logging.getLogger("aipool.edge")

#: Seconds between a worker's tries to reach a broker it lost. Celery's own schedule waits 2, 4,
#: 6... up to 30 s between tries, so a worker came back up to that long after its Redis had
#: failed over (or restarted); trying every second serves within a second of the new master.
RECONNECT_EVERY_S = 1.0


def guarded(
    handle: Callable[[Any], Any],
    inspect: Callable[[Any], Refusal | None],
    refuse: Callable[[Refusal, Any], None],
    connection_errors: tuple[type[BaseException], ...],
    on_time: Callable[[Any], None] = lambda headers: None,
) -> Callable[[Any], Any]:
    """Celery's task message handler ``handle`` with the edge in front of it.

    A message ``inspect`` finds fault with is refused and never reaches ``handle``. One that passes
    has its headers' times read on this host's clock (``on_time``, :mod:`workers.edge.eta`), and
    one that still makes ``handle`` raise is refused too, unless Celery already acknowledged it or
    the error is the connection's own (``connection_errors``: re-raised, so Celery reconnects and
    the broker redelivers it).
    """

    def on_task_received(message: Any) -> Any:
        refusal = inspect(message)
        if refusal is not None:
            refuse(refusal, message)
            return None
        withhold_prompt(message)
        try:
            on_time(message.headers)
            return handle(message)
        except connection_errors:
            raise
        except Exception as exc:
            if message.acknowledged:
                log.error(
                    "message %s failed after it was handed on (%s)",
                    shown(message.headers.get("id")),
                    type(exc).__name__,
                )
                return None
            reason = f"the worker could not take this message ({type(exc).__name__})"
            refuse(refusal_of(message, "malformed_message", reason), message)
            return None

    return on_task_received


class EdgeConsumer(Consumer):
    """Celery's consumer with the edge check in front of its task message handler.

    Selected with ``worker_consumer`` in ``workers.app``.
    """

    #: Moves each message's ETA from the pool's clock onto this host's (one per worker: it keeps
    #: the offset Redis last told).
    _eta_on_host = EtaOnHost(shared_redis)

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        # Exactly the tasks Celery would dispatch: those it built a strategy for.
        known = {name: self.app.tasks[name] for name in self.strategies if name in self.app.tasks}  # type: ignore[attr-defined]  # Consumer's, not in celery-types' stub
        accept = prepare_accept_content(self.app.conf.accept_content)
        # kombu counts KeyError among the Redis transport's connection errors; raised by Celery
        # while it takes a message, it is the message's fault, not the connection's.
        connection_errors = tuple(
            error
            for error in self.connection_errors + self.channel_errors  # type: ignore[attr-defined]  # Consumer's, not in celery-types' stub
            if error is not KeyError
        )
        return guarded(
            super().create_task_handler(*args, **kwargs),
            lambda message: inspect_message(message, known, accept),
            self.refuse,
            connection_errors,
            self._eta_on_host,
        )

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        """A message kombu could not even build (bad compression, bad text): refuse it quietly.

        Celery's own handler logs the body.
        """
        reason = f"message could not be decoded ({type(exc).__name__})"
        self.refuse(refusal_of(message, "malformed_message", reason), message)

    def ensure_connected(self, conn: Any) -> Any:
        """Celery's connection retries (its log lines, its count) at a steady
        :data:`RECONNECT_EVERY_S` instead of kombu's growing intervals."""
        ensure = conn.ensure_connection

        def steadily(*args: Any, **kwargs: Any) -> Any:
            steady = dict.fromkeys(("interval_start", "interval_max"), RECONNECT_EVERY_S)
            return ensure(*args, **steady, interval_step=0, **kwargs)

        conn.ensure_connection = steadily
        try:
            return super().ensure_connected(conn)
        finally:
            del conn.ensure_connection  # the connection's own method again

    def connect(self) -> Any:
        connection = super().connect()
        transport = connection.transport
        if isinstance(transport, RedisTransport):
            # Envelopes the channel drops are answered here, where the result backend is known.
            transport.on_refused = self.refuse
        return connection

    def refuse(self, refusal: Refusal, message: Any = None) -> None:
        """Answer the producer (when it can wait for one), reject ``message``, log one line."""
        answered = "not answered"
        if refusal.task_id is not None and self._keeps_result(refusal, message):
            payload = result.error(refusal.task_id, refusal.code, refusal.reason)
            try:
                self.app.backend.store_result(refusal.task_id, payload, states.SUCCESS)
                answered = "answered"
            except Exception as exc:
                answered = f"answer not stored ({type(exc).__name__})"
        if message is not None:
            reject = getattr(message, "reject_log_error", None)
            if reject is not None:
                reject(log, self.connection_errors, requeue=False)  # type: ignore[attr-defined]  # Consumer's, not in celery-types' stub
        log_refusal(refusal, answered)

    def _keeps_result(self, refusal: Refusal, message: Any) -> bool:
        # As Celery would store it: the message's ignore_result first, then the task's setting.
        # Nobody waits on a maintenance task (ignore_result), so nothing is stored for one.
        headers = getattr(message, "headers", None)
        if isinstance(headers, dict) and isinstance(headers.get("ignore_result"), bool):
            return not headers["ignore_result"]
        task = self.app.tasks.get(refusal.task_name) if refusal.task_name else None
        return task is None or not task.ignore_result
