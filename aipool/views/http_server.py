"""A WSGI server that one client cannot stall, for the usage report and its probe
(``aipool status --serve``).

wsgiref's own server answers one connection at a time and waits on it without end: one TCP
connection that sent nothing held ``/healthz`` until every probe failed (issue #40). This is the
standard library's threading server (wsgiref's ``WSGIServer`` with ``socketserver.ThreadingMixIn``,
as ``http.server.ThreadingHTTPServer`` is) with a bound on everything one connection may take
(:class:`ConnectionLimits`):

==================  ==========================  ==========================================
what                bound (default)             past it
==================  ==========================  ==========================================
connections         ``max_connections`` (512)   closed at once, each its own thread below it
request head        ``head_timeout_s`` (10 s)   closed: the whole head, not each read (a
                    in all                      client sending a byte a second is cut too)
request head        ``max_head_bytes`` (16 KiB) 414 (the request line alone) or 431
request body        ``max_body_bytes`` (1 KiB)  413 (no endpoint reads a body)
each read, write    ``io_timeout_s`` (10 s)     closed
==================  ==========================  ==========================================

Why not a server library: the only one the pool already installs is Tornado (Flower's), which
closes a connection whose head is too large without a status, answers a body too large with a
bare 400, has no write timeout, and would run this WSGI app through its ``WSGIContainer``. Waitress
or cheroot would be a new dependency for two GET endpoints.
"""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from aipool.errors import PoolUnavailable

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may take (see the module's table)."""

    max_connections: int = 512
    head_timeout_s: float = 10.0
    max_head_bytes: int = 16 * 1024
    max_body_bytes: int = 1024
    io_timeout_s: float = 10.0


class _HeadTooLarge(Exception):
    """The request head ran past ``max_head_bytes``."""


class _Incoming(io.RawIOBase):
    """The connection's incoming bytes. While the request head is read: all of it within
    ``head_timeout_s`` and ``max_head_bytes``; after it, each read within ``io_timeout_s``."""

    def __init__(self, connection: socket.socket, limits: ConnectionLimits) -> None:
        super().__init__()
        self._connection = connection
        self._limits = limits
        self._deadline = time.monotonic() + limits.head_timeout_s
        self._left = limits.max_head_bytes
        self._in_head = True

    def readable(self) -> bool:
        return True

    def head_read(self) -> None:
        """The head is in: reads and writes from here on each get ``io_timeout_s``."""
        self._in_head = False
        self._connection.settimeout(self._limits.io_timeout_s)

    def readinto(self, buffer: Any) -> int:
        if not self._in_head:
            return self._connection.recv_into(buffer)
        if self._left <= 0:
            raise _HeadTooLarge
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request head did not arrive in time")
        # One deadline for the whole head: each read may wait only for what is left of it.
        self._connection.settimeout(remaining)
        got = self._connection.recv_into(buffer, min(len(buffer), self._left))
        self._left -= got
        return got


class _Handler(WSGIRequestHandler):
    """wsgiref's handler, reading through :class:`_Incoming` and quiet about each request."""

    server: BoundedServer

    def setup(self) -> None:
        super().setup()
        limits = self.server.limits
        self.connection.settimeout(limits.io_timeout_s)
        self.rfile.close()  # replaced: a file left open would keep the socket from closing
        self._incoming = _Incoming(self.connection, limits)
        self.rfile = io.BufferedReader(self._incoming)

    def handle(self) -> None:
        try:
            try:
                super().handle()
            except _HeadTooLarge:
                self._refuse_head()
        except OSError:
            # The client's doing: it went away, or sent its head too slowly (TimeoutError).
            self.close_connection = True

    def _refuse_head(self) -> None:
        self._incoming.head_read()
        if getattr(self, "raw_requestline", None) is None:
            # wsgiref had not finished reading the request line: it is what is too long
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
        else:
            self.send_error(431)

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        self._incoming.head_read()
        length = self.headers.get("Content-Length", "0").strip()
        if not length.isdigit():
            self.send_error(400, "Bad Content-Length")
            return False
        if int(length) > self.server.limits.max_body_bytes:
            self.send_error(413)
            return False
        return True

    # Probes ask every few seconds; a line each on stderr would drown the logs that matter.
    def log_message(self, format: str, *args: Any) -> None:
        pass


class BoundedServer(ThreadingMixIn, WSGIServer):
    """A WSGI server answering each connection on a thread of its own, within ``limits``."""

    daemon_threads = True
    block_on_close = False
    #: The listen backlog: many clients connecting at once wait to be accepted, not refused.
    request_queue_size = socket.SOMAXCONN

    def __init__(
        self, address: tuple[str, int], app: Any, limits: ConnectionLimits | None = None
    ) -> None:
        self.limits = limits or ConnectionLimits()
        self._slots = threading.BoundedSemaphore(self.limits.max_connections)
        super().__init__(address, _Handler)
        self.set_app(app)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            # Full: closed here, at once, without a thread.
            self.close_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class _BoundedServer6(BoundedServer):
    """:class:`BoundedServer` on an IPv6 address (``::``, ``::1``)."""

    address_family = socket.AF_INET6


def listen(host: str, port: int, app: Any) -> BoundedServer:
    """A :class:`BoundedServer` serving ``app`` on ``host:port`` (0: any free port); raises
    :class:`~aipool.errors.PoolUnavailable` saying why it cannot listen there."""
    server = _BoundedServer6 if ":" in host else BoundedServer
    try:
        return server((host, port), app)
    except OSError as exc:
        raise PoolUnavailable(
            f"cannot listen on {address(host, port)}: {exc.strerror or exc}"
        ) from None


def address(host: str, port: int) -> str:
    """``host:port`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def respond(
    start_response: StartResponse,
    status: str,
    content_type: str,
    data: bytes,
    headers: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    """Answer a WSGI request with ``status`` and the body ``data`` of ``content_type``."""
    start_response(
        status,
        [("Content-Type", content_type), ("Content-Length", str(len(data))), *(headers or [])],
    )
    return [data]
