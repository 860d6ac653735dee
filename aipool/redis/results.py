"""The result backend of every process on the pool's Celery app: Celery's Redis (and Sentinel)
backend, whose producer side waits out a Redis outage as long as the workers' writes do.

Celery's result consumer (the producer's subscription to its results) reconnects through the
backend's ``retry_policy``, the policy of each result write, in one blocking loop: with the pool's
(5 s, ``celeryconfig.result_backend_transport_options``) a producer waiting in ``get`` gave up
after about 5 s of outage with ``RuntimeError: Retry limit exceeded ...``, while the worker kept
trying for much longer to store the answer nobody would read. A longer policy would block ``get``
past its own timeout. Here the consumer instead tries once per wait and, between tries, stays
disconnected without raising: ``get(timeout=...)`` ends at its timeout, and a ``get`` without one
raises :class:`ResultStoreLost` once Redis has been gone for the window below. The first try
after Redis is back reads every stored result it waits for and subscribes again, as Celery's does.
Mixed into the pool's result backends (``workers/result_backend.py``) by :class:`WaitsOutOutages`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from celery.backends.redis import (  # type: ignore[attr-defined]  # not in the stubs
    ResultConsumer as CeleryResultConsumer,
)
from celery.exceptions import BackendGetMetaError


class ResultStoreLost(RuntimeError):
    """Redis, where results are stored, stayed unreachable for longer than a producer waits.

    A ``RuntimeError``, as Celery's own give-up: a caller catching that catches this. The request
    may still be answered: another ``get`` once Redis is back reads the stored answer."""


#: How long one try of a result write reconnects when its retry policy names no ``timeout``
#: (Celery's Redis backend then retries 20 times, about a second apart).
_POLICY_S = 20.0


def outage_window_s(conf: Any) -> float:
    """How long a producer waits for Redis to come back: as long as a worker may still be trying
    to store an answer, so an answer stored at the workers' last try reaches a producer waiting
    for it. A write is tried ``result_backend_max_retries`` + 1 times; each try reconnects for up
    to its retry policy's ``timeout`` (5 s, ``result_backend_transport_options``) and pauses up to
    ``result_backend_max_sleep_between_retries_ms`` (1 s) before the next: measured against a
    closed port, one try gave up after 5.0 s, four after 20.9 s, so 41 would take about 3.6 min.
    The task's hard time limit (``task_time_limit``, 120 s) kills a hop still trying before that:
    the window is the shorter of the two."""
    tries = int(conf.result_backend_max_retries) + 1
    pause_s = float(conf.result_backend_max_sleep_between_retries_ms) / 1000.0
    policy = (conf.result_backend_transport_options or {}).get("retry_policy") or {}
    reconnect_s = float(policy.get("timeout") or _POLICY_S)
    span = tries * (reconnect_s + pause_s)
    limit = conf.task_time_limit
    return min(span, float(limit)) if limit else span


class ResultConsumer(CeleryResultConsumer):  # type: ignore[misc]
    """Celery's Redis result consumer, reconnecting once per wait instead of in a blocking loop."""

    #: Monotonic time the connection was found lost and not yet restored; ``None`` while connected.
    _down_since: float | None = None
    _pubsub: Any

    def _reconnect(self) -> None:
        """One try to subscribe again (reading what was stored meanwhile); on failure stay
        disconnected, and raise :class:`ResultStoreLost` once the outage outlasts the window."""
        with self._locked():
            try:
                self._reconnect_pubsub()
            except self._connection_errors as exc:
                # Down means no subscription: one half made (read, then refused) would wait on
                # nothing, as subscribed, without ever trying again.
                broken, self._pubsub = self._pubsub, None
                if broken is not None:
                    with suppress(Exception):
                        broken.close()
                now = time.monotonic()
                if self._down_since is None:
                    self._down_since = now
                window = outage_window_s(self.app.conf)
                if now - self._down_since < window:
                    return
                # Still disconnected: a later wait tries again, with a window of its own.
                self._down_since = now
                raise ResultStoreLost(
                    f"the result store (Redis) has been unreachable for more than {window:g} s "
                    "(result_backend_max_retries x result_backend_max_sleep_between_retries_ms); "
                    "the request may still be answered: get its result again once Redis is back"
                ) from exc
            self._down_since = None

    def on_wait_for_pending(self, result: Any, **kwargs: Any) -> None:
        """Read what is stored before waiting, in one try: Celery's read retries for as long as a
        write (``result_backend_always_retry``), past any ``get`` timeout, then fails the wait.
        With Redis down, the reconnection reads it instead, once Redis is back."""
        if self._down_since is None:
            with self.backend.trying_once():
                try:
                    super().on_wait_for_pending(result, **kwargs)
                    return
                except (BackendGetMetaError, *self._connection_errors):
                    pass
            self._reconnect()  # one try more, and Redis is taken as down until one succeeds

    def drain_events(self, timeout: float | None = None) -> None:
        if self._down_since is not None:
            with self._locked():
                if self._down_since is not None:
                    self._reconnect()
            if self._pubsub is None:
                # Still down: pause as a quiet poll would, so the caller's deadline is checked.
                time.sleep(1.0 if timeout is None else min(timeout, 1.0))
                return
        super().drain_events(timeout)

    def consume_from(self, task_id: str) -> None:
        with self._locked():
            if self._pubsub is None and self._down_since is not None:
                # Disconnected: the next try subscribes to this result with the others (a fresh
                # subscription, as Celery's would start here, would forget them).
                key = self._get_key_for_task(task_id)
                self._pending_unsubscribe.discard(key)
                self.subscribed_to.add(key)
                self._reconnect()
                return
        super().consume_from(task_id)


class _OneTry:
    """What a backend needs to read once, without its retries, in this thread only."""

    ResultConsumer = ResultConsumer
    _once: threading.local

    @contextmanager
    def trying_once(self) -> Iterator[None]:
        """Within: each of this thread's operations is tried once (``max_retries`` 0)."""
        once = self.__dict__.setdefault("_once", threading.local())
        once.on = True
        try:
            yield
        finally:
            once.on = False

    def _ensure_retryable(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        once = self.__dict__.get("_once")
        if once is not None and getattr(once, "on", False):
            kwargs["max_retries"] = 0
        return super()._ensure_retryable(func, *args, **kwargs)  # type: ignore[misc]


class WaitsOutOutages(_OneTry):
    """What a Redis result backend class takes first among its bases for a producer side that
    waits out an outage (:class:`ResultConsumer`): the pool's backends do
    (``workers/result_backend.py``)."""
