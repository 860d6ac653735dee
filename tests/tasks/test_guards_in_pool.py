"""Breakers and quotas hold across several real worker processes sharing one Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from aipool.breaker import breakers_for
from aipool.breaker.storage import BreakerStore
from aipool.quota import quotas_for
from tasks.client import submit
from tests.conftest import worker_env
from tests.support.pool import Worker

pytestmark = pytest.mark.integration
TIMEOUT = 30
QUESTION = {"prompt": "What is a pod?"}


@pytest.fixture(scope="module")
def ollama_workers(celery_app, pool) -> Iterator[list[Worker]]:  # type: ignore[no-untyped-def]
    """Two more processes on the ollama queue: three workers in all share its breaker."""
    workers = [Worker(worker_env(), queues=("ollama",), concurrency=2) for _ in range(2)]
    try:
        for worker in workers:
            worker.wait_ready(celery_app)
        yield workers
    finally:
        for worker in workers:
            worker.stop()


@pytest.fixture(autouse=True)
def _fresh(healthy, clean_redis, ollama_workers):  # type: ignore[no-untyped-def]
    """Healthy providers, closed breakers, empty quotas."""


def _trail(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["provider"], a["outcome"]) for a in answer["attempts"]]


def _opened_by_three_failures() -> list[dict[str, Any]]:
    """Three requests open Ollama's breaker (it fails them), which then stays open a minute.

    The suite's workers recover after 2 s (conftest); on a loaded machine the requests after the
    third could come later than that and meet a half-open breaker, whose trial is a fourth call
    by design. Moving the stored opening a minute ahead holds the breaker open as ADR-006's 60 s
    window would, whatever the machine's speed; the workers read it from Redis like any opening.
    """
    answers = [submit(QUESTION).get(timeout=TIMEOUT) for _ in range(3)]
    client = healthy_redis()
    state_key = BreakerStore(client, "ollama").state_key
    assert client.hget(state_key, "state") == b"open"
    client.hset(state_key, "opened_at", repr(time.time() + 60))
    return answers


def test_exactly_failure_threshold_calls_reach_a_failing_provider(healthy) -> None:  # type: ignore[no-untyped-def]
    # Given ollama failing with 500s, and three worker processes serving its queue
    healthy.set_fault("ollama", "error_500")
    # When ten requests arrive one after another (each may land on any of the processes), the
    # breaker held open once the first three opened it
    answers = _opened_by_three_failures()
    answers += [submit(QUESTION).get(timeout=TIMEOUT) for _ in range(7)]
    # Then ollama saw exactly its threshold of 3 calls pool-wide (per-process breakers would
    # let 3 through per process), and every other answer came from gemini without a call
    assert healthy.calls("ollama") == 3
    assert {a["provider"] for a in answers} == {"gemini"}
    assert [_trail(a)[0][1] for a in answers] == ["error"] * 3 + ["circuit_open"] * 7


def test_a_burst_cannot_push_more_calls_after_the_breaker_opened(healthy) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "error_500")
    _opened_by_three_failures()
    before = healthy.calls("ollama")
    burst = [submit(QUESTION) for _ in range(30)]
    answers = [r.get(timeout=TIMEOUT) for r in burst]
    assert healthy.calls("ollama") == before == 3
    assert all(_trail(a)[0] == ("ollama", "circuit_open") for a in answers)


def test_half_open_admits_at_most_three_trials_pool_wide_then_closes(healthy) -> None:  # type: ignore[no-untyped-def]
    # Given an open ollama breaker (recovery window 2 s in tests) and ollama still failing
    healthy.set_fault("ollama", "error_500")
    for _ in range(3):
        submit(QUESTION).get(timeout=TIMEOUT)
    assert healthy.calls("ollama") == 3
    time.sleep(2.2)
    # When a burst arrives after the recovery window, over six worker slots in three processes
    burst = [submit(QUESTION) for _ in range(20)]
    answers = [r.get(timeout=TIMEOUT) for r in burst]
    trials = healthy.calls("ollama") - 3
    # Then at most half_open_max_calls (3) trial calls reached ollama, and it reopened
    # (the cloud answers; gemini's 10 rpm may hand some to claude)
    assert 1 <= trials <= 3
    assert not any(a["provider"] == "ollama" for a in answers)
    assert sum(a["attempts"][0]["outcome"] == "error" for a in answers) == trials
    # When ollama recovers and the next window passes
    healthy.heal("ollama")
    time.sleep(2.2)
    first = submit(QUESTION).get(timeout=TIMEOUT)
    # Then a trial succeeds, the breaker closes, and ollama serves everything again
    assert first["provider"] == "ollama"
    later = [submit(QUESTION) for _ in range(10)]
    assert all(r.get(timeout=TIMEOUT)["provider"] == "ollama" for r in later)
    state = breakers_for(healthy_redis())["ollama"].snapshot()["state"]
    assert state == "closed"


def test_an_open_breaker_skips_the_provider_at_dispatch(healthy, clean_redis) -> None:  # type: ignore[no-untyped-def]
    breaker = breakers_for(clean_redis)["ollama"]
    for _ in range(3):
        breaker.record_failure(breaker.acquire())
    answer = submit(QUESTION).get(timeout=TIMEOUT)
    assert answer["provider"] == "gemini"
    assert _trail(answer) == [("ollama", "circuit_open"), ("gemini", "ok")]
    assert healthy.calls("ollama") == 0


def test_a_spent_quota_moves_the_request_on_without_a_call(healthy, clean_redis) -> None:  # type: ignore[no-untyped-def]
    # Given gemini's 10 requests/minute already used by other requests
    gemini = quotas_for(clean_redis)["gemini"]
    for i in range(10):
        gemini.reserve(f"other-{i}", 0, 100)
    healthy.set_fault("ollama", "down")
    # When a request falls back from ollama
    answer = submit(QUESTION).get(timeout=TIMEOUT)
    # Then gemini is skipped with the reason, never called, and claude answers
    assert _trail(answer) == [("ollama", "error"), ("gemini", "quota_exceeded"), ("claude", "ok")]
    assert healthy.calls("gemini") == 0


def test_a_400_class_rejection_does_not_trip_the_breaker(healthy, clean_redis) -> None:  # type: ignore[no-untyped-def]
    healthy.set_fault("ollama", "bad_request")
    for _ in range(5):
        answer = submit(QUESTION).get(timeout=TIMEOUT)
        assert _trail(answer)[0] == ("ollama", "error")
        assert answer["attempts"][0]["error"].startswith("rejected")
    assert healthy.calls("ollama") == 5
    assert breakers_for(clean_redis)["ollama"].snapshot()["state"] == "closed"


def healthy_redis():  # type: ignore[no-untyped-def]
    import redis

    from tests.conftest import TEST_REDIS_URL

    return redis.Redis.from_url(TEST_REDIS_URL)
