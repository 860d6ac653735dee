"""The report's server: no client, idle, slow, oversized or many at once, holds up the probe.

The first tests run the real ``aipool status --serve``; the rest run :class:`BoundedServer` in
this process with limits small enough to reach.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from aipool.views.http_server import BoundedServer, ConnectionLimits
from tests.support.status_server import serve_status
from tests.support.waiting import eventually

PROBE = "/healthz"
TOKEN = "t0ken"
#: A client's patience: generous, so that only a server that does not answer fails the tests.
PATIENCE_S = 10.0


@pytest.fixture
def status_server(tmp_path: Path) -> Iterator[int]:
    """``aipool status --serve`` with a login, serving; its port."""
    process, port = serve_status(tmp_path, AIPOOL_HEALTH_TOKEN=TOKEN)
    try:
        assert process.stderr is not None
        assert "serving on" in process.stderr.readline()
        yield port
    finally:
        process.terminate()
        _, err = process.communicate(timeout=PATIENCE_S)
        assert "Traceback" not in err, err


def _probe(port: int) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{PROBE}", timeout=PATIENCE_S)


def _still_open(sock: socket.socket) -> bool:
    """Whether the server has neither answered nor closed ``sock``."""
    sock.setblocking(False)
    try:
        sock.recv(1)  # an answer, or b"" for a close
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)
    return False


def _raw(port: int, request: bytes) -> bytes:
    """The status line the server answers ``request`` with."""
    with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S) as sock:
        sock.sendall(request)
        with sock.makefile("rb") as answer:
            return answer.readline().strip()


def test_an_idle_connection_does_not_hold_up_the_probe(status_server: int) -> None:
    # Given a client that connected and sends nothing
    with socket.create_connection(("127.0.0.1", status_server)) as idle:
        # When the probe asks
        answer = _probe(status_server)
        # Then it is answered while the idle connection is still open (wsgiref's server waited
        # on the idle one, and the probe timed out)
        assert _still_open(idle)
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})


def test_200_slow_clients_at_once_do_not_stop_the_server(status_server: int) -> None:
    # Given 200 clients, each part way through its request head
    slow = [socket.create_connection(("127.0.0.1", status_server)) for _ in range(200)]
    try:
        for sock in slow:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: slow\r\n")
        # When the probe asks, then it is answered while all 200 still hold their connections
        probe = _probe(status_server)
        assert (probe.status_code, probe.json()) == (200, {"status": "ok"})
        assert sum(_still_open(sock) for sock in slow) == 200
        # and the report is served, to its bearer only
        base = f"http://127.0.0.1:{status_server}/api/v1/health/ai-usage"
        report = httpx.get(base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=PATIENCE_S)
        assert report.status_code == 200 and "providers" in report.json()
        assert httpx.get(base, timeout=PATIENCE_S).status_code == 401
    finally:
        for sock in slow:
            sock.close()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n", b"431"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\nabc", b"413"),
        (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414"),
    ],
    ids=["headers", "body", "request-line"],
)
def test_an_oversized_request_is_refused_and_the_server_keeps_serving(
    status_server: int, request_bytes: bytes, status: bytes
) -> None:
    # When a request too large is sent, then it is refused with its status
    assert _raw(status_server, request_bytes).split()[1] == status
    # and the probe is still answered
    assert _probe(status_server).status_code == 200


# -- the server in this process, with limits small enough to reach -------------------------------


def _hello(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"path": environ["PATH_INFO"]}).encode()]


@contextmanager
def _running(limits: ConnectionLimits) -> Iterator[int]:
    server = BoundedServer(("127.0.0.1", 0), _hello, limits)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=PATIENCE_S)


def _closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(PATIENCE_S)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_head_trickled_a_byte_at_a_time_is_cut_at_the_heads_deadline() -> None:
    # Given a head deadline of 0.3 s, and a client sending its head a byte every 0.1 s: each
    # read gets a byte well within any per-read timeout, so only a deadline on the whole head
    # ends it
    header = b"X-Slow: " + b"a" * 500 + b"\r\n\r\n"
    with (
        _running(ConnectionLimits(head_timeout_s=0.3)) as port,
        closing(socket.create_connection(("127.0.0.1", port))) as sock,
    ):
        sock.sendall(b"GET /x HTTP/1.1\r\n")
        cut = threading.Event()
        sent = 0
        # When it trickles (for 50 s at most, if nothing cuts it)
        watcher = threading.Thread(target=lambda: _closed_by_server(sock) and cut.set())
        watcher.start()
        while sent < len(header) and not cut.wait(0.1):
            try:
                sock.sendall(header[sent : sent + 1])
            except OSError:
                break
            sent += 1
        watcher.join(timeout=PATIENCE_S)
    # Then the server closed it before the head was complete, without answering
    assert cut.is_set() and sent < len(header)


def test_past_its_connection_limit_the_server_closes_new_ones_at_once() -> None:
    # Given a server for two connections at once, both taken by idle clients
    with _running(ConnectionLimits(max_connections=2)) as port:
        first = socket.create_connection(("127.0.0.1", port))
        second = socket.create_connection(("127.0.0.1", port))
        try:
            # When a third connects, then it is closed unanswered
            with closing(socket.create_connection(("127.0.0.1", port))) as third:
                third.sendall(b"GET /x HTTP/1.1\r\n\r\n")
                assert _closed_by_server(third)
        finally:
            first.close()
        # When one is gone, then a new client is answered (once the server has seen it go)
        try:
            answer = eventually(lambda: _get(f"http://127.0.0.1:{port}/again"), PATIENCE_S, "")
        finally:
            second.close()
    assert answer.json() == {"path": "/again"}


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=PATIENCE_S)
    except httpx.TransportError:  # closed at once: the server is still full
        return None
