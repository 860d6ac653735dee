"""A host name whose resolution blocks, as glibc's resolver does against a silent name server.

glibc's ``getaddrinfo`` waits for the name server in ``poll`` and, when a signal interrupts the
wait, polls again for what is left of its timeout: a Python signal handler (the call's interval
timer) runs only once the C call returns. The stub keeps that property without a name server: it
holds back ``SIGALRM`` in the calling thread while it waits, so the handler runs only after it.
"""

from __future__ import annotations

import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def slow_resolution(host: str, seconds: float, to: str = "127.0.0.1") -> Iterator[None]:
    """While open, resolving ``host`` takes ``seconds`` (uninterruptibly) and yields ``to``.

    A resolution still waiting when the block closes fails instead (``gaierror``): the call that
    asked was abandoned at its bound, and connecting it afterwards would leave a socket nobody
    closes (a ``ResourceWarning`` in whichever later test collects it)."""
    real = socket.getaddrinfo
    still_open = True

    def stalled(name: Any, *args: Any, **kwargs: Any) -> Any:
        if name != host:
            return real(name, *args, **kwargs)
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        try:
            time.sleep(seconds)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        if not still_open:
            raise socket.gaierror(socket.EAI_NONAME, f"{host}: resolution abandoned")
        return real(to, *args, **kwargs)

    socket.getaddrinfo = stalled
    try:
        yield
    finally:
        still_open = False
        socket.getaddrinfo = real
