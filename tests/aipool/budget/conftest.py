"""Fixtures of the budget tests: the ledger database, a local HTTP sink and a local SMTP server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import Engine

from aipool.ledger.testing import empty_ledger, ledger_engine
from tests.support.shared_servers import database_named


@pytest.fixture(scope="session")
def _session_engine() -> Iterator[Engine]:
    engine = ledger_engine(database_named("ledger"))
    yield engine
    engine.dispose()


@pytest.fixture
def engine(_session_engine: Engine) -> Engine:
    """The ledger database, empty at the start of each test."""
    empty_ledger(_session_engine)
    return _session_engine


class HttpSink:
    """A loopback HTTP server that stores every JSON body posted to it, by path."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, Any]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sink.posts.append((self.path, json.loads(body)))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll: shutdown() waits for the loop's next look (0.5 s by default, per test).
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def bodies(self, path: str) -> list[Any]:
        return [body for p, body in self.posts if p == path]

    def __enter__(self) -> HttpSink:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def http_sink() -> Iterator[HttpSink]:
    with HttpSink() as sink:
        yield sink


class Mailbox:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        return "250 OK"


@pytest.fixture
def smtp_server() -> Iterator[tuple[Controller, Mailbox]]:
    mailbox = Mailbox()
    # aiosmtpd probes its own port after start, so it needs a real number, not 0.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield controller, mailbox
    controller.stop()
