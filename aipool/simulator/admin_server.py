"""The admin endpoint: read a simulator's state and switch faults over HTTP.

``GET /admin/state``; ``POST /admin/fault`` with ``{"provider", "kind", ...options}``;
``POST /admin/heal`` with ``{"provider"}``; ``POST /admin/reset``. Bad input gets a 400 with
``{"error": "..."}``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

import aipool.simulator.listener as listeners
from aipool.simulator.faults import InvalidFault
from aipool.simulator.names import UnknownProvider


class Administered(Protocol):
    """What the admin endpoint asks of the simulator it serves (:class:`~aipool.simulator.simulator.
    Simulator`, which makes its admin server: named here, not imported, so the two modules do not
    import each other)."""

    def state(self) -> dict[str, Any]: ...

    def set_fault(self, provider: str, kind: str, **options: Any) -> dict[str, Any]: ...

    def heal(self, provider: str) -> dict[str, Any]: ...

    def reset(self) -> None: ...


class AdminServer:
    """The admin endpoint of one :class:`~aipool.simulator.simulator.Simulator`."""

    def __init__(self, simulator: Administered, host: str, port: int) -> None:
        self.simulator = simulator
        self.host = host
        self.port = port
        self._listener: listeners.Listener | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> None:
        """Bind and serve on a daemon thread."""
        self._listener = listeners.bind(self.host, self.port, _AdminHandler, self.simulator)
        self.port = self._listener.server_address[1]
        self._thread = listeners.serve_in_thread(self._listener, "simulator-admin")

    def stop(self) -> None:
        """Close the port."""
        if self._listener is not None:
            listeners.close(self._listener, self._thread)
            self._listener = None


class _AdminHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, a keep-alive client waits for
    # the delayed ACK (~40 ms) before the body arrives.
    disable_nagle_algorithm = True
    server_version = "aipool-simulator-admin/1"
    server: listeners.Listener

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet, as the provider servers do."""

    def do_GET(self) -> None:
        simulator: Administered = self.server.owner
        if self.path.split("?")[0] == "/admin/state":
            self._reply(200, simulator.state())
        else:
            self._reply(404, {"error": f"GET {self.path} not found"})

    def do_POST(self) -> None:
        simulator: Administered = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            path = self.path.split("?")[0]
            if path == "/admin/fault":
                options = dict(body)
                provider = str(options.pop("provider", ""))
                kind = str(options.pop("kind", ""))
                self._reply(200, simulator.set_fault(provider, kind, **options))
            elif path == "/admin/heal":
                self._reply(200, simulator.heal(str(body.get("provider", ""))))
            elif path == "/admin/reset":
                simulator.reset()
                self._reply(200, simulator.state())
            else:
                self._reply(404, {"error": f"POST {self.path} not found"})
        except (InvalidFault, UnknownProvider, ValueError, TypeError) as error:
            self._reply(400, {"error": str(error)})

    def _reply(self, status: int, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
