"""A worker exposes pool-wide Prometheus metrics, aggregated over its prefork processes, to the
bearer of its metrics token only (``AIPOOL_METRICS_TOKEN``)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tasks.client import submit
from tests.conftest import worker_env
from tests.support.metrics import TOKEN, metrics_env, scrape
from tests.support.pool import Worker

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def metered_worker(celery_app, pool, tmp_path: Path) -> Iterator[tuple[Worker, int]]:  # type: ignore[no-untyped-def]
    port = _free_port()
    env = worker_env(**metrics_env(tmp_path / "prom", port))
    # the session pool also serves these queues; this worker serves Claude's two lanes here (a
    # critical request waits in claude.urgent)
    worker = Worker(env, queues=("claude", "claude.urgent"), concurrency=2)
    try:
        worker.wait_ready(celery_app)
        yield worker, port
    finally:
        worker.stop()


def _sample(text: str, line_start: str) -> float:
    for line in text.splitlines():
        if line.startswith(line_start):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_calls_tokens_and_cost_appear_on_the_metrics_endpoint(
    metered_worker, healthy, clean_redis
) -> None:  # type: ignore[no-untyped-def]
    _, port = metered_worker
    # Given a critical request, which starts at claude (served by the metered worker and the pool)
    answers = [
        submit({"prompt": f"Outage {i}", "priority": "critical"}).get(timeout=30) for i in range(4)
    ]
    assert {a["provider"] for a in answers} == {"claude"}
    body = scrape(port)
    # Then the counters carry provider and model labels only, never a user or request id
    served = _sample(body, 'aipool_requests_total{outcome="ok",provider="claude",service="other"}')
    assert 1 <= served <= 4
    assert (
        _sample(
            body,
            'ai_tokens_total{direction="output",model="claude-sonnet-5",provider="claude",service="other"}',
        )
        > 0
    )
    assert _sample(body, 'aipool_cost_usd_total{provider="claude",service="other"}') > 0
    assert "user" not in body and answers[0]["request_id"] not in body


def test_an_anonymous_scrape_is_refused_and_the_token_reads_the_metrics(metered_worker) -> None:  # type: ignore[no-untyped-def]
    worker, port = metered_worker
    url = f"http://127.0.0.1:{port}/metrics"
    # Given a worker serving its metrics with AIPOOL_METRICS_TOKEN set
    # When anyone asks without the token, or with another one, then nothing is shown
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = httpx.get(url, headers=headers, timeout=5)
        assert refused.status_code == 401, headers
        assert refused.headers["WWW-Authenticate"] == 'Bearer realm="aipool"'
        assert "aipool_" not in refused.text and "process_" not in refused.text
    # and the bearer of the token reads the metrics
    assert 'aipool_worker_consumes{queue="claude"} 1.0' in scrape(port)
    # while the probe path answers without a login and shows nothing
    probe = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
    assert probe.status_code == 200 and "aipool_" not in probe.text
    # and the worker's log says a login is required, never what the token is
    assert f":{port}/metrics (login required)" in worker.log()
    assert TOKEN not in worker.log()
