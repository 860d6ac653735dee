"""A loopback webhook receiver: the demo's stand-in for the alert channel.

The pool sends its alerts to ``AIPOOL_ALERT_WEBHOOK_URL`` (an Alertmanager-style body); the demo
points that here and shows what arrived, so "the alert fired once" is seen, not assumed.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class ReceivedAlert:
    """One alert as the channel received it."""

    at: float
    status: str
    rule: str
    provider: str
    threshold: str
    summary: str


def _alerts_of(body: dict[str, Any], at: float) -> list[ReceivedAlert]:
    received = []
    for alert in body.get("alerts", []):
        labels = alert.get("labels", {})
        received.append(
            ReceivedAlert(
                at=at,
                status=str(alert.get("status", "")),
                rule=str(labels.get("rule", labels.get("alertname", ""))),
                provider=str(labels.get("provider", "")),
                threshold=str(labels.get("threshold", "")),
                summary=str(alert.get("annotations", {}).get("summary", "")),
            )
        )
    return received


class AlertSink:
    """Collects the alerts POSTed to :attr:`url` while it runs."""

    def __init__(self) -> None:
        self.alerts: list[ReceivedAlert] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                sink.alerts.extend(_alerts_of(body, time.time()))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/alerts"

    def __enter__(self) -> AlertSink:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
