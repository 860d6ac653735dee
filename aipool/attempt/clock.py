"""Redis's clock as seen from one process: the pool's one time, whatever the hosts' clocks say.

Every attempt script reads Redis's ``TIME`` and answers with it, so leases, deadlines, breaker
windows and the RPM window are all measured on one clock. A process still needs an estimate of
that time before it asks (which calendar day's counters to name); it keeps the offset between its
own clock and the last time Redis told, and a script that finds the estimate on the wrong side of
a day boundary refuses, tells the time, and is asked again.
"""

from __future__ import annotations

import time
from collections.abc import Callable


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
