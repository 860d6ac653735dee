"""The AI usage report (ADR-006 §7, ``GET /api/v1/health/ai-usage``) and a tiny server for it.

The report reads Redis only: each provider's breaker snapshot and quota usage, beside its limits.
It never takes a breaker trial slot or reserves quota.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server
from zoneinfo import ZoneInfo

from aipool.breaker import Breaker
from aipool.periods import pool_zone
from aipool.quota import Quota
from aipool.redis_url import connect
from aipool.settings import settings
from aipool.settings.provider_limits import ProviderLimits

USAGE_PATH = "/api/v1/health/ai-usage"

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


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


def make_app(redis_client: Any, report: Callable[[Any], dict[str, Any]] = usage_report) -> WSGIApp:
    """A WSGI app serving ``GET /api/v1/health/ai-usage`` as JSON; 404 elsewhere, 405 for other
    methods on that path, 503 when Redis cannot be read."""

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") != USAGE_PATH:
            return _json(start_response, "404 Not Found", {"error": "not found"})
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _json(start_response, "405 Method Not Allowed", {"error": "GET only"})
        try:
            body = report(redis_client)
        except Exception as exc:  # the endpoint reports an outage rather than crashing on one
            return _json(start_response, "503 Service Unavailable", {"error": type(exc).__name__})
        return _json(start_response, "200 OK", body)

    return app


def _json(start_response: StartResponse, status: str, body: Any) -> list[bytes]:
    data = json.dumps(body, ensure_ascii=False, sort_keys=True).encode()
    start_response(
        status,
        [("Content-Type", "application/json; charset=utf-8"), ("Content-Length", str(len(data)))],
    )
    return [data]


class _QuietHandler(WSGIRequestHandler):
    # Probes hit this endpoint every few seconds; one stderr line each drowns real logs.
    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(host: str, port: int, redis_url: str) -> None:
    """Serve the usage report on ``host:port`` until interrupted (stdlib ``wsgiref``)."""
    client = connect(redis_url)
    with make_server(host, port, make_app(client), handler_class=_QuietHandler) as server:
        server.serve_forever()
