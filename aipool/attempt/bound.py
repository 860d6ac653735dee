"""A wall-clock bound on one model call, whatever its SDK does per read.

The SDKs' ``timeout`` is per socket read (httpx): a server that sends a byte every half second
holds a call far past it. In a process's main thread (Celery's prefork and solo pools run tasks
there) the bound is an interval timer whose signal raises :class:`~aipool.errors.ProviderTimeout`
inside the blocked read; elsewhere the call runs in a helper thread that is abandoned (left to
its SDK's own timeout) once the bound passes.

A signal does not end every wait: glibc's ``getaddrinfo`` polls its name server again when a
signal interrupts it, and the handler runs only once the C call returns (a silent name server:
seconds per try). While the timer is armed, host names are resolved in a helper thread that the
main thread waits for, a wait the timer does end; the helper is abandoned to the resolver's own
timeout.

The helper-thread fallback bounds the caller's wait, not the call: the abandoned call runs on
until its SDK's per-read timeout ends it (a provider that trickles its answer keeps it longer).
Celery's prefork and solo pools, the ones the pool runs, never take that path.
"""

from __future__ import annotations

import signal
import socket
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
    resolve = socket.getaddrinfo
    # Every SDK connects through ``socket.create_connection``, which looks the name up here.
    socket.getaddrinfo = _resolved_aside(resolve)
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
        socket.getaddrinfo = resolve
        signal.signal(signal.SIGALRM, previous)


def _resolved_aside(resolve: Callable[..., Any]) -> Callable[..., Any]:
    """``resolve``, run in a helper thread when called from the main thread, which waits for it
    no longer than the armed timer has left."""

    def aside(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is not threading.main_thread():
            return resolve(*args, **kwargs)
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = resolve(*args, **kwargs)
            except BaseException as exc:  # handed to the caller below
                box["error"] = exc

        helper = threading.Thread(target=run, name="aipool-bounded-resolve", daemon=True)
        helper.start()
        # The timer's handler interrupts this wait if the signal reaches the main thread; if the
        # kernel hands it to another thread, the wait still ends when the timer has run out.
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        helper.join(left + 0.05)
        if helper.is_alive():
            raise _Expired
        if "error" in box:
            raise box["error"]
        return box["value"]

    return aside


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
