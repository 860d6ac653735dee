"""A loopback stand-in for a provider that answers every POST with one recorded response.

Wire tests serve a provider's documented response (status, headers, body) from it and call it
through the adapter's real SDK, the way the hop runner does.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class CannedProvider:
    """A loopback server answering every POST with ``status``, ``headers`` and ``body`` (JSON);
    ``requests`` keeps the JSON bodies it was sent."""

    def __init__(
        self, body: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        payload = json.dumps(body).encode()
        extra = dict(headers or {})
        self.requests: list[Any] = []
        sent = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sent.append(json.loads(raw or b"{}"))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(
    canned: list[CannedProvider],
    body: Any,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> CannedProvider:
    """Start a :class:`CannedProvider` for the test (closed by the ``canned`` fixture)."""
    server = CannedProvider(body, status=status, headers=headers)
    canned.append(server)
    return server
