"""What one simulated provider is doing: its fault, its call counts and its recent requests.

Handler threads and the control side (admin endpoint, tests) share one :class:`ProviderState`; every
read and write goes through its lock, and :meth:`ProviderState.admit` takes a call's fault and
spends one of its ``times`` in the same step, so concurrent calls never both take the last one.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from aipool.simulator.faults import Fault

#: How many request bodies each provider keeps for :meth:`ProviderState.last_requests`.
RECENT_REQUESTS = 10


class ProviderState:
    """Fault switch, counters and request log for one provider; safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fault: Fault | None = None
        self._remaining: int | None = None
        self._calls = 0
        self._probes = 0
        self._recent: deque[Any] = deque(maxlen=RECENT_REQUESTS)
        # Hung requests wait on this event; setting it lets them go at once (heal, reset, stop).
        self._release = threading.Event()

    @property
    def fault(self) -> Fault | None:
        """The fault now in force, or ``None`` when healthy."""
        with self._lock:
            return self._fault

    @property
    def calls(self) -> int:
        """Inference calls that reached the handler, faulted or not."""
        with self._lock:
            return self._calls

    @property
    def probes(self) -> int:
        """Health probes (cheap GET endpoints) that reached the handler."""
        with self._lock:
            return self._probes

    def set_fault(self, fault: Fault | None) -> None:
        """Put ``fault`` in force (``None`` heals) and let go of any request held by ``hang``."""
        with self._lock:
            self._fault = fault
            self._remaining = fault.times if fault is not None else None
            self._let_hung_requests_go()

    def reset(self) -> None:
        """Heal, zero the counters and forget the recent requests."""
        with self._lock:
            self._fault = None
            self._remaining = None
            self._calls = 0
            self._probes = 0
            self._recent.clear()
            self._let_hung_requests_go()

    def admit(self, body: Any) -> Fault | None:
        """Count an inference call, log its body and return the fault it meets (spending a ``times``)."""
        with self._lock:
            self._calls += 1
            self._recent.append(body)
            return self._spend()

    def admit_probe(self) -> None:
        """Count a health probe; probes never meet faults other than ``down``."""
        with self._lock:
            self._probes += 1

    def take_drop(self) -> bool:
        """Spend one ``times`` of a counted ``down`` fault; true if this connection must be dropped."""
        with self._lock:
            if self._fault is None or self._fault.kind != "down" or self._fault.times is None:
                return False
            self._spend()
            return True

    def last_requests(self) -> list[Any]:
        """The most recent request bodies, oldest first (parsed JSON, or text if not JSON)."""
        with self._lock:
            return list(self._recent)

    def let_go(self) -> None:
        """Let go of every request ``hang`` is holding now, without changing the fault."""
        with self._lock:
            self._let_hung_requests_go()

    def snapshot(self) -> dict[str, Any]:
        """Fault (with the ``remaining`` times), counters and recent requests, as plain JSON data."""
        with self._lock:
            fault = None
            if self._fault is not None:
                fault = {**self._fault.to_dict(), "remaining": self._remaining}
            return {
                "fault": fault,
                "calls": self._calls,
                "probes": self._probes,
                "last_requests": list(self._recent),
            }

    def hold(self, seconds: float | None) -> bool:
        """Block the calling handler up to ``seconds`` (``None``: until let go); false if let go
        early (heal, reset, stop)."""
        with self._lock:
            release = self._release
        return not release.wait(seconds)

    def _spend(self) -> Fault | None:
        fault = self._fault
        if fault is not None and self._remaining is not None:
            self._remaining -= 1
            if self._remaining <= 0:
                self._fault = None
                self._remaining = None
        return fault

    def _let_hung_requests_go(self) -> None:
        self._release.set()
        self._release = threading.Event()
