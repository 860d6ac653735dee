"""A worker's metrics endpoint serves its registry to the bearer of the metrics token only; its
probe path shows nothing; without a token it is not served, unless anyone is meant to read it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from aipool.errors import NoLogin
from aipool.metrics import endpoint

TOKEN = "metrics-t0ken"


@pytest.fixture()
def served() -> Iterator[str]:
    """The endpoint's base URL, serving a registry with one counter and asking for ``TOKEN``."""
    registry = CollectorRegistry()
    Counter("spend_total", "a counter", registry=registry).inc(3)
    server = endpoint.serve(registry, "0.0.0.0", 0, TOKEN)
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "authorization", [None, "Bearer wrong", TOKEN, f"Basic {TOKEN}", f"Bearer {TOKEN}x"]
)
def test_without_the_token_the_metrics_are_refused(served: str, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    answer = httpx.get(f"{served}/metrics", headers=headers, timeout=5)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == 'Bearer realm="aipool"'
    assert "spend_total" not in answer.text


def test_the_bearer_of_the_token_reads_the_metrics(served: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    answer = httpx.get(f"{served}/metrics", headers=headers, timeout=5)
    assert answer.status_code == 200
    assert "spend_total 3.0" in answer.text


def test_the_probe_path_needs_no_token_and_shows_nothing(served: str) -> None:
    answer = httpx.get(f"{served}/healthz", timeout=5)
    assert answer.status_code == 200 and "spend_total" not in answer.text
    assert httpx.get(f"{served}/", timeout=5).status_code == 404


def test_without_a_token_the_metrics_are_refused_naming_both_ways_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    for name in ("AIPOOL_METRICS_TOKEN", "AIPOOL_METRICS_TOKEN_FILE", "AIPOOL_ALLOW_ANONYMOUS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AIPOOL_SECRETS_DIR", str(tmp_path))
    with pytest.raises(NoLogin) as refused:
        endpoint.metrics_token()
    message = str(refused.value)
    assert "AIPOOL_METRICS_TOKEN (or AIPOOL_METRICS_TOKEN_FILE)" in message
    assert "AIPOOL_ALLOW_ANONYMOUS=1" in message and "\n" not in message
    # and a secret file is a token, as for every secret of the pool
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.setenv("AIPOOL_METRICS_TOKEN_FILE", str(tmp_path / "token"))
    assert endpoint.metrics_token() == TOKEN
    # while with no token anyone is served only when that is asked for
    monkeypatch.delenv("AIPOOL_METRICS_TOKEN_FILE")
    monkeypatch.setenv("AIPOOL_ALLOW_ANONYMOUS", "1")
    assert endpoint.metrics_token() is None


def test_the_line_says_where_and_whether_a_login_is_asked_for_never_the_token() -> None:
    line = endpoint.serving_line("0.0.0.0", 9808, TOKEN)
    assert line.endswith("http://0.0.0.0:9808/metrics (login required)") and TOKEN not in line
    assert "WITHOUT a login (AIPOOL_ALLOW_ANONYMOUS=1)" in endpoint.serving_line(
        "0.0.0.0", 9808, None
    )
    assert "http://[::1]:9808/metrics" in endpoint.serving_line("::1", 9808, TOKEN)


def test_an_address_given_is_the_only_one_served() -> None:
    # Given the endpoint told to listen on one loopback address (AIPOOL_METRICS_HOST)
    server = endpoint.serve(CollectorRegistry(), "127.0.0.2", 0, TOKEN)
    port = server.server_port
    try:
        # Then it answers there, and nothing answers on the host's other addresses
        assert httpx.get(f"http://127.0.0.2:{port}/healthz", timeout=5).status_code == 200
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    finally:
        server.shutdown()
        server.server_close()


def test_an_ipv6_address_is_served_too() -> None:
    server = endpoint.serve(CollectorRegistry(), "::1", 0, TOKEN)
    try:
        answer = httpx.get(f"http://[::1]:{server.server_port}/healthz", timeout=5)
        assert answer.status_code == 200
    finally:
        server.shutdown()
        server.server_close()
