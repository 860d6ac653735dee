"""A wall-clock bound on one model call, whatever its SDK does per read.

The SDKs' ``timeout`` is per socket read (httpx): a server that sends a byte every half second
holds a call far past it. In a process's main thread (Celery's prefork and solo pools run tasks
there) the bound is an interval timer whose signal raises :class:`~aipool.errors.ProviderTimeout`
inside the blocked read; elsewhere the call runs in a helper thread that is abandoned (left to
its SDK's own timeout) once the bound passes.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from aipool.errors import ProviderTimeout

T = TypeVar("T")


class _Expired(BaseException):
    """Raised by the timer's signal inside the call; a BaseException, so no SDK swallows it."""


def within(seconds: float, call: Callable[[], T], what: str) -> T:
    """``call()``, or :class:`ProviderTimeout` once ``seconds`` of wall-clock time have passed."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _with_timer(seconds, call, what)
    return _in_thread(seconds, call, what)


def _with_timer(seconds: float, call: Callable[[], T], what: str) -> T:
    def expire(signum: int, frame: Any) -> None:
        raise _Expired

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        try:
            return call()
        finally:
            # Disarmed first: a signal arriving before this line is caught below all the same.
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise ProviderTimeout(f"{what}: no whole answer within {seconds:.3g} s") from None
    finally:
        signal.signal(signal.SIGALRM, previous)


def _in_thread(seconds: float, call: Callable[[], T], what: str) -> T:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=run, name="aipool-bounded-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ProviderTimeout(f"{what}: no whole answer within {seconds:.3g} s")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
