"""A threaded loopback HTTP listener that can be closed and re-bound, dropping live connections.

``ThreadingHTTPServer`` alone keeps serving keep-alive connections after its listening socket is
closed, so a client with a pooled connection would never notice a provider going down. The
listener remembers its open connections and shuts them too.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: How often the serving loop checks for shutdown: short, so stopping and ``down`` are quick.
POLL_INTERVAL_S = 0.05


class Listener(ThreadingHTTPServer):
    """``ThreadingHTTPServer`` on daemon threads that tracks its connections.

    ``owner`` is whatever the request handler needs to find its way back (the provider server).
    """

    daemon_threads = True
    allow_reuse_address = True
    # Hung handlers must never hold up closing: their threads are daemons and are not joined.
    block_on_close = False

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], owner: Any
    ) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def drop_connections(self) -> None:
        """Shut every open connection, waking handlers that wait for a next request."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            # One already closed by its handler has nothing left to drop.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


def bind(
    host: str, port: int, handler: type[BaseHTTPRequestHandler], owner: Any, attempts: int = 40
) -> Listener:
    """Bind a :class:`Listener`, retrying briefly while a just-closed port is still held."""
    for attempt in range(attempts):
        try:
            return Listener((host, port), handler, owner)
        except OSError as error:
            if error.errno != errno.EADDRINUSE or port == 0 or attempt == attempts - 1:
                raise
            time.sleep(0.025)
    raise AssertionError("unreachable")


def serve_in_thread(listener: Listener, name: str) -> threading.Thread:
    """Run ``listener`` on a daemon thread and return the thread."""
    thread = threading.Thread(
        target=listener.serve_forever,
        kwargs={"poll_interval": POLL_INTERVAL_S},
        name=name,
        daemon=True,
    )
    thread.start()
    return thread


def close(listener: Listener, thread: threading.Thread | None) -> None:
    """Stop serving, close the listening socket and drop live connections."""
    listener.shutdown()
    listener.server_close()
    listener.drop_connections()
    if thread is not None:
        thread.join(timeout=2)
