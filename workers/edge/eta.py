"""A message's ETA moved from the pool's clock onto this worker's host clock, on receipt.

An ETA is an instant. The pool writes it on its own clock, Redis's (``aipool/attempt/clock.py``:
a busy delivery's recheck, a response-cache follower); Celery's worker waits for it on its host's
(its strategy hands ``to_timestamp(eta)`` to the timer's ``call_at``, which compares it with
``time.time()``). So before Celery reads the ``eta`` header, it is shifted here by this worker's
offset from Redis: a worker 60 s ahead of Redis waits the 5 s a recheck asked, as does one 60 s
behind, where it came back at once, again and again, or held the message a minute (issue #42).
The header stays an ISO 8601 instant: a plain Celery worker reads the same message as before.

Every aware ETA is moved, whoever wrote it: a plain producer's ``countdown`` is an instant on its
host's clock, right as far as that host keeps time with Redis. A naive one (Celery reads it in
the app's time zone) is left as Celery reads it.

The worker's parent asks Redis its time at most every :data:`ASK_EVERY_S`, and only when a message
with an ETA arrives: one round trip in the event loop, bounded by the pool's Redis socket timeout.
A Redis that does not answer leaves the last offset, or none (the host's clock, as Celery alone).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from celery.utils.time import maybe_iso8601
from redis.exceptions import RedisError

from aipool.attempt.clock import RedisClock

log = logging.getLogger("aipool.edge")

#: How long this worker trusts the offset Redis last told it (host clocks drift slowly; one
#: stepped by NTP is followed within this long).
ASK_EVERY_S = 30.0


class EtaOnHost:
    """Moves the ``eta`` header of each message it is given onto this host's clock."""

    def __init__(
        self,
        client: Callable[[], Any],
        clock: RedisClock | None = None,
        ask_every_s: float = ASK_EVERY_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.clock = clock or RedisClock()
        self._ask_every_s = ask_every_s
        self._monotonic = monotonic
        self._asked_at: float | None = None

    def __call__(self, headers: Any) -> None:
        eta = headers.get("eta") if isinstance(headers, dict) else None
        if not isinstance(eta, str) or not eta:
            return
        try:
            instant = maybe_iso8601(eta)
        except (ValueError, TypeError, AttributeError, OverflowError):
            return  # the edge's inspection refuses it
        if instant is None or instant.tzinfo is None:
            return
        self._refresh()
        if self.clock.told_yet:
            headers["eta"] = self.clock.on_host(instant).isoformat()

    def _refresh(self) -> None:
        now = self._monotonic()
        if self._asked_at is not None and now - self._asked_at < self._ask_every_s:
            return
        self._asked_at = now
        try:
            self.clock.ask(self._client())
        except RedisError:
            log.warning("Redis did not tell its time: ETAs are read on this host's clock")
