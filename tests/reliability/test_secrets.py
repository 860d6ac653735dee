"""A key every provider echoes back is kept nowhere: not in results, logs, the ledger, alerts or
metrics.

A worker runs with planted keys, and every simulated provider answers errors that repeat the key
its request carried (as misconfigured gateways do). The requests fall back to the end of their
chains and the breakers open, so the pool writes every kind of record it has.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from sqlalchemy import create_engine, select

from aipool.ledger.models import UsageLogRow
from tests.support.accounting import drain_everything
from tests.support.metrics import metrics_env, scrape
from tests.support.pool import Worker
from tests.support.private_pool import private_pool

pytestmark = pytest.mark.integration
KEYS = {
    "GEMINI_API_KEY": f"AIzaPlanted{uuid.uuid4().hex}",
    "ANTHROPIC_API_KEY": f"sk-ant-planted-{uuid.uuid4().hex}",
    "NVIDIA_API_KEY": f"nvapi-planted-{uuid.uuid4().hex}",
    "OLLAMA_API_KEY": f"ollama-planted-{uuid.uuid4().hex}",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def echoing(simulator, ledger_url, tmp_path_factory) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """A plain worker with planted keys and its metrics endpoint, on a database of its own."""
    port = _free_port()
    with private_pool(
        5,
        app="workers.app",
        **metrics_env(tmp_path_factory.mktemp("metrics"), port),
        **KEYS,
    ) as pool:
        yield {"app": pool.app, "client": pool.client, "worker": pool.worker, "port": port}


def test_a_planted_key_every_provider_echoes_is_kept_nowhere(echoing, healthy, ledger_url) -> None:  # type: ignore[no-untyped-def]
    app: Celery = echoing["app"]
    # Given every provider answering errors that repeat the key it was sent
    for provider in ("ollama", "nemotron", "gemini", "claude"):
        healthy.set_fault(provider, "echo_key", status=500)
    # When plain and tool-calling requests go through the pool, enough to open the breakers
    tool = {"name": "get_pod", "description": "Look up a pod", "parameters": {"type": "object"}}
    requests = [{"prompt": f"What is a pod? {n}"} for n in range(4)] + [
        {"prompt": f"Find pod {n}", "tools": [tool]} for n in range(4)
    ]
    sent = [app.send_task("ai.generate", kwargs={"request": r}, queue="router") for r in requests]
    answers = [s.get(timeout=60) for s in sent]
    # Then the requests got their terminal answers, after errors from the providers
    assert {a["status"] for a in answers} == {"fallback", "refused"}
    assert any(a["outcome"] == "error" for ans in answers for a in ans["attempts"])
    engine = create_engine(ledger_url)
    drain_everything(echoing["client"], engine)
    ids = [a["request_id"] for a in answers]
    with engine.connect() as conn:
        rows = conn.execute(select(UsageLogRow).where(UsageLogRow.request_id.in_(ids))).all()
    engine.dispose()
    assert rows
    metrics = scrape(echoing["port"])
    worker: Worker = echoing["worker"]
    log = Path(worker.log_path).read_text(errors="replace")
    # Then no key appears in any result, ledger row, log line (alerts are logged) or metric
    places = {
        "results": json.dumps(answers),
        "ledger": repr([tuple(r) for r in rows]),
        "log": log,
        "metrics": metrics,
    }
    for name, key in KEYS.items():
        leaked = [place for place, text in places.items() if key in text]
        assert leaked == [], f"{name} found in {leaked}"
    # And the answers' content is not in the log either (no prompt or answer text by default)
    assert "What is a pod?" not in log
