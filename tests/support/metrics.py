"""A worker's metrics endpoint as the tests run and read it: on, with the bearer token it asks
for (``AIPOOL_METRICS_TOKEN``), and scraped with that token."""

from __future__ import annotations

from pathlib import Path

import httpx

#: The token the tests' workers ask for (a test value, never a real secret).
TOKEN = "test-metrics-t0ken"
#: The header that reads a worker's metrics.
LOGIN = {"Authorization": f"Bearer {TOKEN}"}


def metrics_env(directory: Path, port: int) -> dict[str, str]:
    """A worker's environment for serving its metrics on ``port``, with samples under
    ``directory``, to the bearer of :data:`TOKEN`."""
    return {
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
        "AIPOOL_METRICS_PORT": str(port),
        "AIPOOL_METRICS_TOKEN": TOKEN,
    }


def scrape(port: int) -> str:
    """The ``/metrics`` text of the worker serving on ``port``, read with the token."""
    response = httpx.get(f"http://127.0.0.1:{port}/metrics", headers=LOGIN, timeout=5)
    response.raise_for_status()
    return response.text
