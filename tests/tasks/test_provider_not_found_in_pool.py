"""A provider's wrong base URL, met by a real worker: the operator is told which URL, once a day.

The worker here serves every queue, the maintenance queue too, so the alert it hands over is sent
by the same pool: from the hop that met the 404, through ``aipool.provider_not_found``, to the
alert journal and the webhook.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine, delete

from aipool.ledger.db import make_engine
from aipool.ledger.models import AlertEvent
from tests.aipool.budget.conftest import HttpSink
from tests.support.private_pool import PrivatePool, private_pool, send

pytestmark = pytest.mark.integration
TIMEOUT = 60
#: A general question (Ollama first); its words must never reach an alert.
PROMPT = "Why does the checkout pod restart every night at 03:00?"


@pytest.fixture
def sink() -> Iterator[HttpSink]:
    with HttpSink() as server:
        yield server


@pytest.fixture
def journal(ledger_url: str) -> Iterator[Engine]:
    """The ledger the worker journals alerts in, without URL alerts of earlier runs."""
    engine = make_engine(ledger_url)
    with engine.begin() as conn:
        conn.execute(delete(AlertEvent).where(AlertEvent.rule == "not_found"))
    yield engine
    engine.dispose()


@pytest.fixture
def wrong_url_pool(healthy, ledger_url: str, sink: HttpSink) -> Iterator[PrivatePool]:  # type: ignore[no-untyped-def]
    # Ollama's URL with a path too many: the simulated Ollama answers 404 for /wrong/api/chat
    with private_pool(
        10,
        DATABASE_URL=ledger_url,
        OLLAMA_BASE_URL=f"{healthy.base_urls['ollama']}/wrong",
        AIPOOL_ALERT_WEBHOOK_URL=f"{sink.url}/hook",
        AIPOOL_ALERT_LANG="en",
        AIPOOL_ALERTS="pool",
    ) as pool:
        yield pool


def _alerts(sink: HttpSink, name: str) -> list[dict[str, Any]]:
    return [
        alert
        for body in sink.bodies("/hook")
        for alert in body["alerts"]
        if alert["labels"]["alertname"] == name
    ]


def test_a_wrong_ollama_url_falls_back_and_pages_once_naming_its_host(
    wrong_url_pool: PrivatePool, healthy, sink: HttpSink, journal: Engine
) -> None:  # type: ignore[no-untyped-def]
    # Given: Ollama's base URL with a path too many
    # When: two general requests are answered (too few to open Ollama's breaker: it takes 3)
    answers = [
        send(wrong_url_pool, {"prompt": f"{PROMPT} (#{n})"}).get(timeout=TIMEOUT) for n in range(2)
    ]
    # Then: each went on to the next provider, Ollama's attempt saying its URL was not found
    assert {a["status"] for a in answers} == {"ok"}
    assert {a["attempts"][0]["provider"] for a in answers} == {"ollama"}
    assert {a["attempts"][0]["code"] for a in answers} == {"not_found"}
    # And: one alert pages, under its own name, naming Ollama, its URL's host and the setting
    deadline = time.monotonic() + TIMEOUT
    while not _alerts(sink, "AipoolProviderNotFound") and time.monotonic() < deadline:
        time.sleep(0.2)
    (alert,) = _alerts(sink, "AipoolProviderNotFound")
    host = urlsplit(healthy.base_urls["ollama"]).netloc
    summary, description = alert["annotations"]["summary"], alert["annotations"]["description"]
    assert summary == f"Ollama's URL not found: {host} does not serve the Ollama API"
    assert "check OLLAMA_BASE_URL" in description
    # and nothing of the URL's path, nor of the requests
    sent = repr(sink.bodies("/hook"))
    assert "/wrong" not in sent and "checkout" not in sent
    # And: no breaker paged: the URL's alert is the only page at this traffic
    assert _alerts(sink, "OllamaConsecutiveFailures") == []
    # When: the URL keeps failing that day
    send(wrong_url_pool, {"prompt": PROMPT}).get(timeout=TIMEOUT)
    time.sleep(1.0)
    # Then: nothing more is sent
    assert len(_alerts(sink, "AipoolProviderNotFound")) == 1
