"""``aipool submit`` against a real worker: the answer as JSON, timed from when it was routed."""

from __future__ import annotations

import json

import pytest

from aipool.cli import run
from aipool.cli.submit import INSPECT_TIMEOUT_S

pytestmark = pytest.mark.integration


def test_submit_prints_the_answer_and_its_latency_leaves_out_the_worker_check(
    pool, healthy, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    # Given a worker on every queue and healthy providers
    # When a request is submitted from the command line
    code = run(["submit", "What is a pod?"])
    # Then the answer is printed as JSON
    out = capsys.readouterr().out
    answer = json.loads(out)
    assert code == 0 and answer["status"] == "ok" and answer["provider"] == "ollama"
    # and its latency is the pool's, not the second the command spends asking the workers which
    # queues they consume before it sends (it read about 1,100 ms for a 10 ms answer)
    assert answer["latency_ms"] < INSPECT_TIMEOUT_S * 1000, answer["latency_ms"]
