"""The AI usage report and its HTTP endpoint."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import fakeredis
import pytest
import redis

from aipool.breaker import Breaker
from aipool.providers.catalog import PROVIDERS
from aipool.quota import Quota
from aipool.settings import settings
from aipool.views.health import PROBE_PATH, USAGE_PATH, make_app, usage_report
from aipool.views.http_server import BoundedServer
from tests.support.shared_servers import redis_db

GUARDS_REDIS_URL = os.environ.get("AIPOOL_GUARDS_TEST_REDIS_URL", redis_db(11))
TAIPEI = ZoneInfo("Asia/Taipei")
NOW = 1_795_000_000.0


@pytest.fixture(params=["fakeredis", "real-redis"])
def client(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "fakeredis":
        fake = fakeredis.FakeRedis(server=fakeredis.FakeServer())
        yield fake
        fake.close()
        return
    real = redis.Redis.from_url(GUARDS_REDIS_URL)
    real.flushdb()
    yield real
    real.flushdb()
    real.close()


def test_the_report_shows_breakers_quotas_and_limits_per_provider(client):
    # Given gemini's breaker open and some claude quota used
    limits = settings().limits
    gemini = Breaker(client, "gemini", limits["gemini"].breaker, clock=lambda: NOW)
    for _ in range(limits["gemini"].breaker.failure_threshold):
        gemini.record_failure(gemini.acquire())
    claude = Quota(client, "claude", limits["claude"].quota, clock=lambda: NOW, tz=TAIPEI)
    claude.settle(claude.reserve("req-1", 0, 2_000), 1_500)
    # When the report is read
    report = usage_report(client, clock=lambda: NOW, tz=TAIPEI)
    # Then every provider is there, and it survives a JSON round trip unchanged
    assert set(report) == set(PROVIDERS)
    assert json.loads(json.dumps(report)) == report
    assert report["gemini"]["breaker"]["state"] == "open"
    assert (
        report["gemini"]["breaker"]["retry_at"] == NOW + limits["gemini"].breaker.recovery_timeout
    )
    assert report["claude"]["quota"]["daily_tokens"] == {
        "used": 1_500,
        "limit": limits["claude"].quota.daily_tokens,
        "remaining": (limits["claude"].quota.daily_tokens or 0) - 1_500,
    }
    assert report["claude"]["quota"]["rpm"]["used"] == 1
    assert (
        report["claude"]["limits"]["quota"]["monthly_tokens"]
        == limits["claude"].quota.monthly_tokens
    )
    assert report["ollama"]["quota"]["daily_tokens"]["remaining"] is None
    assert report["ollama"]["limits"]["breaker"] == {
        "failure_threshold": limits["ollama"].breaker.failure_threshold,
        "recovery_timeout": limits["ollama"].breaker.recovery_timeout,
        "half_open_max_calls": limits["ollama"].breaker.half_open_max_calls,
    }


def test_reading_the_report_takes_no_trial_slot(client):
    # Given a breaker whose recovery window has passed, so it is due to go half-open
    gemini = settings().limits["gemini"].breaker
    breaker = Breaker(client, "gemini", gemini, clock=lambda: NOW)
    for _ in range(gemini.failure_threshold):
        breaker.record_failure(breaker.acquire())
    later = NOW + gemini.recovery_timeout
    # When the report is read many times
    for _ in range(5):
        usage_report(client, clock=lambda: later, tz=TAIPEI)
    # Then every trial slot is still free
    breaker.clock = lambda: later
    assert all(breaker.acquire().trial for _ in range(gemini.half_open_max_calls))


def _call(
    app: Any, path: str, method: str = "GET", authorization: str | None = None
) -> tuple[str, dict[str, str], Any]:
    seen: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        seen["status"], seen["headers"] = status, dict(headers)

    environ = {"PATH_INFO": path, "REQUEST_METHOD": method}
    if authorization is not None:
        environ["HTTP_AUTHORIZATION"] = authorization
    body = b"".join(app(environ, start_response))
    return seen["status"], seen["headers"], json.loads(body)


def test_the_endpoint_serves_the_report_as_json(client):
    status, headers, body = _call(make_app(client), USAGE_PATH)
    assert status == "200 OK"
    assert headers["Content-Type"].startswith("application/json")
    assert set(body) == set(PROVIDERS)


def test_other_paths_are_404_and_other_methods_405(client):
    app = make_app(client)
    assert _call(app, "/")[0] == "404 Not Found"
    assert _call(app, "/api/v1/health")[0] == "404 Not Found"
    assert _call(app, USAGE_PATH, "POST")[0] == "405 Method Not Allowed"


def test_the_endpoint_reports_an_unreachable_redis_as_503():
    def broken(_: Any) -> dict[str, Any]:
        raise redis.ConnectionError("connection refused")

    status, _, body = _call(make_app(None, report=broken), USAGE_PATH)
    assert status == "503 Service Unavailable"
    assert body == {"error": "ConnectionError"}


def test_with_a_token_the_report_is_served_only_to_its_bearer(client):
    app = make_app(client, token="s3cret-token")
    # Without it, or with another, the report is refused and says how to ask
    status, headers, body = _call(app, USAGE_PATH)
    assert status == "401 Unauthorized"
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert "gemini" not in json.dumps(body)
    assert _call(app, USAGE_PATH, authorization="Bearer nope")[0] == "401 Unauthorized"
    # With it, the report
    status, _, body = _call(app, USAGE_PATH, authorization="Bearer s3cret-token")
    assert status == "200 OK" and set(body) == set(PROVIDERS)


def test_probes_get_a_bare_answer_without_a_token(client):
    # The probe path shows nothing but whether Redis answers
    status, _, body = _call(make_app(client, token="s3cret-token"), PROBE_PATH)
    assert (status, body) == ("200 OK", {"status": "ok"})
    down = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    status, _, body = _call(make_app(down, token="s3cret-token"), PROBE_PATH)
    assert (status, body) == ("503 Service Unavailable", {"error": "ConnectionError"})


def test_the_endpoint_over_http(client):
    # Given the app behind the server aipool status --serve runs, on loopback
    server = BoundedServer(("127.0.0.1", 0), make_app(client))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        # When a client fetches the report and a wrong path
        with urllib.request.urlopen(base + USAGE_PATH, timeout=5) as resp:
            body = json.load(resp)
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(base + "/nope", timeout=5)
        missing.value.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    # Then the report came back as JSON, and the wrong path was 404
    assert body["gemini"]["breaker"]["state"] == "closed"
    assert missing.value.code == 404
