"""A worker exposes pool-wide Prometheus metrics, aggregated over its prefork processes."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tasks.client import submit
from tests.conftest import worker_env
from tests.support.pool import Worker

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def metered_worker(celery_app, pool, tmp_path: Path) -> Iterator[tuple[Worker, int]]:  # type: ignore[no-untyped-def]
    port = _free_port()
    env = worker_env(PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom"), AIPOOL_METRICS_PORT=str(port))
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
    body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
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
