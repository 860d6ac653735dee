"""Redis's clock as seen from one process: the pool's one time, whatever the hosts' clocks say.

Every attempt script reads Redis's ``TIME`` and answers with it, so leases, deadlines, breaker
windows and the RPM window are all measured on one clock. A process still needs an estimate of
that time before it asks (which calendar day's counters to name); it keeps the offset between its
own clock and the last time Redis told, and a script that finds the estimate on the wrong side of
a day boundary refuses, tells the time, and is asked again.

A message to be taken later carries its ETA (Celery's ``eta`` header, an instant) on this clock
too: the sender writes it as the pool's now plus the delay (:func:`due_in`), and the worker that
receives it moves it onto its own host's clock before Celery's timer waits for it
(:meth:`RedisClock.on_host`, ``workers/edge/eta.py``). Written on the sender's host clock, a
recheck asked for 5 s later waited 65 s on a worker whose host was 60 s behind that sender's,
and came back at once, again and again, on one 60 s ahead (issue #42).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from redis.exceptions import RedisError

log = logging.getLogger(__name__)


class RedisClock:
    """This process's estimate of Redis's time (epoch seconds)."""

    def __init__(self, local: Callable[[], float] = time.time) -> None:
        self._local = local
        self._offset = 0.0
        #: Whether Redis has told this process its time yet (until then the estimate is the
        #: host's own clock, however far off).
        self.told_yet = False

    def now(self) -> float:
        """The estimate: this host's clock plus the last offset Redis told."""
        return self._local() + self._offset

    def told(self, redis_now: float) -> None:
        """Redis said it is ``redis_now``: later estimates follow it."""
        self._offset = redis_now - self._local()
        self.told_yet = True

    def ask(self, client: Any) -> None:
        """Ask Redis (``client``) its time and follow it; a :class:`RedisError` propagates."""
        seconds, micros = client.time()
        self.told(float(seconds) + float(micros) / 1_000_000)

    def on_host(self, instant: datetime) -> datetime:
        """``instant``, read on the pool's clock, as this host's clock shows that moment."""
        return instant - timedelta(seconds=self._offset)


def due_in(delay_s: float, clock: RedisClock, client: Any) -> datetime:
    """The ETA (UTC) of a message to be taken ``delay_s`` seconds from now, on the pool's clock.

    A process Redis has not told its time yet asks it once (``client``); one that cannot ask
    writes the ETA on its host's clock, the best estimate it has (as Celery's ``countdown``)."""
    if not clock.told_yet:
        try:
            clock.ask(client)
        except RedisError:
            log.warning("Redis did not tell its time: an ETA is written on this host's clock")
    return datetime.fromtimestamp(clock.now() + delay_s, tz=UTC)
