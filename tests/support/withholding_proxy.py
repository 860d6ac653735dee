"""A TCP proxy in front of Redis that can lose one reply after the command ran.

``WithholdingProxy(upstream_port)`` forwards every connection to Redis on loopback. Once
``withhold(marker, seconds)`` is called, the next command whose bytes hold ``marker`` (e.g. the
``begin`` op of the attempt script, ``b"$5\\r\\nbegin\\r\\n"``) reaches Redis and runs, but its reply
is held for ``seconds`` and then thrown away with the connection: what a client sees when a network
drops the answer to a write that was applied.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType

from tests.support.services import free_port


class WithholdingProxy:
    """A loopback proxy to ``upstream_port`` that can withhold one reply (see the module)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.port = free_port()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._marker: bytes | None = None
        self._seconds = 0.0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        #: How many replies were withheld so far.
        self.withheld = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def withhold(self, marker: bytes, seconds: float) -> None:
        """Lose the reply to the next command holding ``marker``, ``seconds`` after it ran."""
        with self._lock:
            self._marker, self._seconds = marker, seconds

    def _take(self, data: bytes) -> float | None:
        with self._lock:
            if self._marker is not None and self._marker in data:
                self._marker = None
                self.withheld += 1
                return self._seconds
        return None

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            lost = threading.Event()
            threading.Thread(
                target=self._requests, args=(client, upstream, lost), daemon=True
            ).start()
            threading.Thread(
                target=self._replies, args=(upstream, client, lost), daemon=True
            ).start()

    def _requests(
        self, client: socket.socket, upstream: socket.socket, lost: threading.Event
    ) -> None:
        try:
            while data := client.recv(65536):
                hold = self._take(data)
                if hold is not None:
                    lost.set()
                    upstream.sendall(data)
                    # The command runs; its reply is held, then dropped with the connection.
                    time.sleep(hold)
                    break
                upstream.sendall(data)
        except OSError:
            pass
        _close(client, upstream)

    def _replies(
        self, upstream: socket.socket, client: socket.socket, lost: threading.Event
    ) -> None:
        try:
            while data := upstream.recv(65536):
                if lost.is_set():
                    continue
                client.sendall(data)
        except OSError:
            pass
        _close(client, upstream)

    def close(self) -> None:
        self._stopped.set()
        self._listener.close()

    def __enter__(self) -> WithholdingProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
