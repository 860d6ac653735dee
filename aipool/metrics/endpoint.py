"""A worker's metrics endpoint: ``GET /metrics`` on ``AIPOOL_METRICS_PORT`` (every interface, or
``AIPOOL_METRICS_HOST``), to the bearer of ``AIPOOL_METRICS_TOKEN`` only.

The metrics carry each service's spend, request rates, provider outcomes, breaker and quota state:
like the usage report, they are served only to ``Authorization: Bearer <token>`` (a secret: the
variable, ``AIPOOL_METRICS_TOKEN_FILE`` or ``$AIPOOL_SECRETS_DIR/aipool_metrics_token``), and a
worker without a token does not serve them, unless ``AIPOOL_ALLOW_ANONYMOUS=1``
(:mod:`aipool.views.serving`). ``GET /healthz`` answers liveness probes and shows nothing.

Served by the usage report's server (:mod:`aipool.views.http_server`: each connection on a thread
of its own, within bounds of time and size) on a thread of the worker's parent, started before it
forks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from aipool.views.http_server import (
    BoundedServer,
    StartResponse,
    WSGIApp,
    address,
    listen,
    respond,
)
from aipool.views.serving import BEARER_CHALLENGE, announcement, bearer_accepted, required_token

METRICS_PATH = "/metrics"
PROBE_PATH = "/healthz"
#: The name the refusal and the log line give the endpoint.
SERVER = "the worker's metrics endpoint"
TOKEN = "AIPOOL_METRICS_TOKEN"
PLAIN = "text/plain; charset=utf-8"


def metrics_token() -> str | None:
    """The bearer token the metrics ask for; raises :class:`~aipool.errors.NoLogin` when none is
    set, unless ``AIPOOL_ALLOW_ANONYMOUS=1`` (then ``None``: served to anyone)."""
    return required_token(SERVER, TOKEN)


def make_app(registry: Any, token: str | None) -> WSGIApp:
    """A WSGI app serving ``registry`` on ``GET /metrics`` (401 without the bearer ``token`` when
    one is set) and ``GET /healthz`` for probes; 404 elsewhere."""
    from prometheus_client import make_wsgi_app

    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == PROBE_PATH:
            return respond(start_response, "200 OK", PLAIN, b"ok\n")
        if path != METRICS_PATH:
            return respond(start_response, "404 Not Found", PLAIN, b"not found\n")
        if not bearer_accepted(environ, token):
            refused = b"bearer token required\n"
            return respond(start_response, "401 Unauthorized", PLAIN, refused, [BEARER_CHALLENGE])
        return metrics(environ, start_response)  # type: ignore[no-any-return]

    return app


def serve(registry: Any, host: str, port: int, token: str | None) -> BoundedServer:
    """Serve ``registry`` on ``host``'s ``port`` from a daemon thread, asking for ``token``;
    return the server. Raises :class:`~aipool.errors.PoolUnavailable` when the address cannot be
    taken."""
    server = listen(host, port, make_app(registry, token))
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server


def serving_line(host: str, port: int, token: str | None) -> str:
    """The line saying where the metrics are served and whether they ask for a login."""
    return announcement(SERVER, f"http://{address(host, port)}{METRICS_PATH}", bool(token))
