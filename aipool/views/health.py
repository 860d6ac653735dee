"""The AI usage report (ADR-006 §7, ``GET /api/v1/health/ai-usage``) and a tiny server for it.

:func:`usage_report` reads Redis only: each provider's breaker snapshot and quota usage, beside its
limits; it never takes a breaker trial slot or reserves quota. The server serves the whole reading
``aipool status --json`` prints (:mod:`aipool.views.pool_report`): that, queue depths, today's usage
and cost, the month's cost against the budget, and the records waiting for the ledger. With ``AIPOOL_HEALTH_TOKEN`` set (a secret:
the variable, ``AIPOOL_HEALTH_TOKEN_FILE`` or ``$AIPOOL_SECRETS_DIR/aipool_health_token``) the
report is served only to ``Authorization: Bearer <token>``; ``GET /healthz`` answers probes
(200 while Redis answers, 503 otherwise) and shows nothing. Without a token it does not start,
unless ``AIPOOL_ALLOW_ANONYMOUS=1`` (:mod:`aipool.views.serving`).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import Any
from zoneinfo import ZoneInfo

from aipool.breaker import Breaker
from aipool.errors import PoolUnavailable
from aipool.periods import pool_zone
from aipool.quota import Quota
from aipool.redis.url import connect, ping
from aipool.settings import settings
from aipool.settings.provider_limits import ProviderLimits
from aipool.views import serving
from aipool.views.http_server import StartResponse, WSGIApp, address, listen, respond
from aipool.views.serving import BEARER_CHALLENGE, announce, bearer_accepted

USAGE_PATH = "/api/v1/health/ai-usage"
PROBE_PATH = "/healthz"


def usage_report(
    redis_client: Any,
    *,
    limits: Mapping[str, ProviderLimits] | None = None,
    clock: Callable[[], float] = time.time,
    tz: ZoneInfo | None = None,
) -> dict[str, Any]:
    """Per provider: ``breaker`` (``Breaker.snapshot()``), ``quota`` (``Quota.usage()``: used and
    remaining RPM, daily requests, daily tokens, monthly tokens) and ``limits`` (breaker settings
    and quota limits as configured). JSON-serialisable; changes nothing in Redis."""
    chosen = settings().limits if limits is None else limits
    zone = tz if tz is not None else pool_zone()
    report: dict[str, Any] = {}
    for provider, pl in chosen.items():
        breaker = Breaker(redis_client, provider, pl.breaker, clock)
        quota = Quota(redis_client, provider, pl.quota, clock, zone)
        report[provider] = {
            "breaker": breaker.snapshot(),
            "quota": quota.usage(),
            "limits": {"breaker": asdict(pl.breaker), "quota": asdict(pl.quota)},
        }
    return report


def make_app(
    redis_client: Any,
    report: Callable[[Any], dict[str, Any]] = usage_report,
    token: str | None = None,
) -> WSGIApp:
    """A WSGI app serving ``GET /api/v1/health/ai-usage`` as JSON (401 without the bearer
    ``token`` when one is set) and ``GET /healthz`` for probes; 404 elsewhere, 405 for other
    methods, 503 when Redis cannot be read."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path not in (USAGE_PATH, PROBE_PATH):
            return _json(start_response, "404 Not Found", {"error": "not found"})
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _json(start_response, "405 Method Not Allowed", {"error": "GET only"})
        if path == PROBE_PATH:
            try:
                redis_client.ping()
            except Exception as exc:
                return _json(
                    start_response, "503 Service Unavailable", {"error": type(exc).__name__}
                )
            return _json(start_response, "200 OK", {"status": "ok"})
        if not bearer_accepted(environ, token):
            return _json(
                start_response,
                "401 Unauthorized",
                {"error": "bearer token required"},
                [BEARER_CHALLENGE],
            )
        try:
            body = report(redis_client)
        except Exception as exc:  # the endpoint reports an outage rather than crashing on one
            return _json(start_response, "503 Service Unavailable", {"error": type(exc).__name__})
        return _json(start_response, "200 OK", body)

    return app


def _json(
    start_response: StartResponse,
    status: str,
    body: Any,
    headers: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    data = json.dumps(body, ensure_ascii=False, sort_keys=True).encode()
    return respond(start_response, status, "application/json; charset=utf-8", data, headers)


def required_token() -> str | None:
    """The bearer token the report asks for; raises :class:`~aipool.errors.NoLogin` when none is
    set, unless ``AIPOOL_ALLOW_ANONYMOUS=1`` (then ``None``: served to anyone)."""
    return serving.required_token("the usage report", "AIPOOL_HEALTH_TOKEN")


def serve(
    host: str,
    port: int,
    redis_url: str,
    token: str | None,
    read: Callable[[Any], dict[str, Any]],
) -> None:
    """Serve the pool's report on ``host:port`` until interrupted, asking for ``token`` (see
    :func:`required_token`); say where on stderr first. The body is what ``read`` makes of the
    pool's Redis client (``aipool status --serve`` passes what ``aipool status --json`` prints,
    :func:`aipool.views.pool_report.read_snapshot`). Connections are answered each on a thread of
    their own, within bounds of time and size (:mod:`aipool.views.http_server`): no client can
    hold up the probe."""
    reading = threading.Lock()

    def report(client: Any) -> dict[str, Any]:
        # One reading at a time: each opens the ledger anew, and readers asking together would
        # only multiply that load (the probe does not wait on it).
        with reading:
            return read(client)

    client = connect(redis_url)
    app = make_app(client, report=report, token=token)
    with listen(host, port, app) as server:
        where = f"http://{address(host, server.server_port)}"
        announce(
            "the usage report", f"{where}{USAGE_PATH} (probes: {where}{PROBE_PATH})", bool(token)
        )
        _say_if_redis_is_away(redis_url)
        server.serve_forever()


def _say_if_redis_is_away(redis_url: str) -> None:
    """Say on stderr, once at start, that the pool's Redis does not answer: the server serves
    anyway (its probe answers 503 until Redis is back), and the person who started it should not
    have to find that out from a probe."""
    try:
        ping(redis_url)
    except PoolUnavailable as exc:
        print(
            f"aipool: {exc}; {PROBE_PATH} answers 503 until it does",
            file=sys.stderr,
            flush=True,
        )
