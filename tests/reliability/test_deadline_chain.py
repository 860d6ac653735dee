"""Issue #42, case 8: a deadline is shared along the chain, not spent on the first provider.

Ollama hanging, a request with ``deadline_s: 2`` used to have Ollama's call cut at 1.99 s, Gemini
and Claude skipped as ``deadline``, and the producer answered ``status: error``. Now each hop's
call may use only its share of what is left (:mod:`aipool.attempt.timing`): Gemini answers within
the 2 s, whether the pool knows Gemini's latency yet (an even split) or not; and when no provider
can answer in time the request gets the chain's end at its deadline, never a bare error.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest
import redis

from aipool.attempt.timing import SAMPLE_EVERY_S, recent_median
from aipool.simulator import Simulator
from tests.support.accounting import trail
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.requests import CLOUD_TRIAGE, CRITICAL, QUESTION

pytestmark = pytest.mark.integration
TIMEOUT = 60
DEADLINE = {**QUESTION, "deadline_s": 2}


def _timed(celery_app: Any, request: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The answer to ``request`` sent by name, and how long the producer waited for it (s)."""
    started = time.monotonic()
    answer = celery_app.send_task("ai.generate", kwargs={"request": request}, queue="router").get(
        timeout=TIMEOUT
    )
    return answer, time.monotonic() - started


def _answered_by_gemini_in_time(celery_app: Any, runs: int, scenario: str) -> list[float]:
    waits = []
    for _ in range(runs):
        answer, waited = _timed(celery_app, DEADLINE)
        # Then Gemini answers, within the deadline, after Ollama's share ran out
        assert (answer["status"], answer["provider"]) == ("ok", "gemini"), answer
        # (Ollama's cut calls are not its fault: its breaker stays closed, call after call)
        assert trail(answer)[0] == ("ollama", "error"), answer
        assert answer["attempts"][0]["code"] == "deadline", answer
        assert answer["latency_ms"] < 2000, answer
        waits.append(waited)
    record_figure(scenario, "producer's wait, median", round(statistics.median(waits), 3), "s")
    record_figure(scenario, "producer's wait, max", round(max(waits), 3), "s")
    return waits


def test_a_hanging_first_provider_leaves_gemini_time_to_answer(
    providers: Simulator, clean_redis: redis.Redis, celery_app: Any, pool: Worker
) -> None:
    # Given Ollama hanging, and no latency known for any provider (an even split of the deadline)
    providers.set_fault("ollama", "hang")
    # When requests with a deadline of 2 s are sent
    _answered_by_gemini_in_time(celery_app, 3, "deadline shared, even split")
    # And once Gemini's and Claude's latencies are known (requests that start there)
    for _ in range(3):
        assert _timed(celery_app, CRITICAL)[0]["provider"] == "claude"
        assert _timed(celery_app, {"prompt": CLOUD_TRIAGE})[0]["provider"] == "gemini"
        time.sleep(SAMPLE_EVERY_S)  # a worker process keeps one sample per provider this often
    assert all(recent_median(clean_redis, p) is not None for p in ("gemini", "claude"))
    _answered_by_gemini_in_time(celery_app, 3, "deadline shared, p50 known")


def test_no_provider_in_time_gets_the_chains_end_at_its_deadline(
    providers: Simulator, clean_redis: redis.Redis, celery_app: Any, pool: Worker
) -> None:
    # Given every provider of the general chain hanging
    for provider in ("ollama", "gemini", "claude"):
        providers.set_fault(provider, "hang")
    # When a request with a deadline of 2 s is sent
    answer, waited = _timed(celery_app, DEADLINE)
    record_figure("every provider hanging", "producer's wait", round(waited, 3), "s")
    # Then it gets the static answer, at its deadline, and its attempts say the deadline ended it
    assert answer["status"] == "fallback", answer
    attempts = answer["attempts"]
    assert any(a["outcome"] == "deadline" or a.get("code") == "deadline" for a in attempts), answer
    assert answer["latency_ms"] < 2500, answer
