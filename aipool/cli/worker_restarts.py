"""How often ``aipool worker`` starts again a class of worker that died.

One worker dying (an unrecoverable error, the kernel's OOM killer, a SIGKILL) used to stop every
other class with it: routing, the paid providers and the urgent lanes went down because the local
model's worker did (issue #42). The command now starts that class again, and only that class, a
bounded number of times: a worker that dies again and again (a refused setting, a broken install)
is not restarted for ever, the command stops them all and says why, and its supervisor takes over.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

#: Restarts of one class allowed within :data:`WINDOW_S` before the command gives up.
MAX_RESTARTS = 5
#: The window the restarts are counted in, seconds.
WINDOW_S = 600.0


@dataclass
class RestartBudget:
    """The restarts one class of worker may still have: at most ``limit`` within ``window_s``."""

    limit: int = MAX_RESTARTS
    window_s: float = WINDOW_S
    _at: deque[float] = field(default_factory=deque, repr=False)

    def take(self, now: float) -> bool:
        """Whether the class may start again at ``now`` (monotonic seconds); counts it if so."""
        while self._at and now - self._at[0] >= self.window_s:
            self._at.popleft()
        if len(self._at) >= self.limit:
            return False
        self._at.append(now)
        return True

    @property
    def used(self) -> int:
        """Restarts counted in the current window."""
        return len(self._at)
