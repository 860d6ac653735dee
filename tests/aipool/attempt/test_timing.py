"""The share of a deadline one hop's call may use, and the latencies kept for it (#42, case 8)."""

from __future__ import annotations

import fakeredis
import pytest

from aipool.attempt import timing
from aipool.attempt.timing import (
    FLOOR_S,
    MARGIN_S,
    SAMPLES,
    latency_key,
    recent_median,
    record_latency,
    share,
)


def _unknown(provider: str) -> float | None:
    return None


def test_the_last_provider_gets_all_that_is_left() -> None:
    assert share(1.7, [], _unknown) == 1.7


def test_without_enough_samples_the_remainder_is_split_evenly() -> None:
    # Ollama with Gemini and Claude after it: a third each
    assert share(3.0, ["gemini", "claude"], _unknown) == pytest.approx(1.0)


def test_with_the_next_median_known_it_is_left_its_median_and_a_margin() -> None:
    assert share(2.0, ["gemini", "claude"], lambda p: 0.2) == pytest.approx(2.0 - 0.2 - MARGIN_S)


def test_a_share_is_never_below_the_floor_nor_above_what_is_left_beyond_it() -> None:
    assert share(3.0, ["gemini"], lambda p: 2.9) == FLOOR_S
    assert share(3.0, ["gemini", "claude"], lambda p: 0.1) == pytest.approx(3.0 - 0.1 - MARGIN_S)


def test_an_estimate_that_says_nothing_is_left_still_gives_the_floor() -> None:
    # The worker's estimate of what is left may be short (a host clock that stepped ahead):
    # begin cuts the call at the deadline on Redis's clock, or makes none once it passed, so the
    # share never begins a call with no time to answer (#42's model test: 0 s, charged).
    assert share(0.3, ["gemini", "claude"], _unknown) == FLOOR_S
    assert share(-1.0, ["gemini"], _unknown) == FLOOR_S
    assert share(-1.0, [], _unknown) == FLOOR_S


def test_latencies_keep_the_last_samples_and_nothing_else() -> None:
    client = fakeredis.FakeRedis()
    record_latency(client, "gemini", 0.1, every_s=0)
    record_latency(client, "gemini", 0.3, every_s=0)
    # Below three samples the median says nothing
    assert recent_median(client, "gemini") is None
    record_latency(client, "gemini", 0.2, every_s=0)
    assert recent_median(client, "gemini") == pytest.approx(0.2)
    for _ in range(2 * SAMPLES):
        record_latency(client, "gemini", 1.0, every_s=0)
    assert client.llen(latency_key("gemini")) == SAMPLES
    assert recent_median(client, "gemini") == pytest.approx(1.0)
    # Only durations: no prompt, no request id
    assert all(float(v) == 1.0 for v in client.lrange(latency_key("gemini"), 0, -1))
    assert client.ttl(latency_key("gemini")) > 0


def test_a_process_keeps_at_most_one_sample_per_provider_in_a_short_while() -> None:
    # The process's own memory of its last samples starts empty (earlier tests in this process
    # ran hops that kept some).
    timing._last_sample.clear()
    client = fakeredis.FakeRedis()
    for _ in range(5):
        record_latency(client, "claude", 0.1, every_s=60)
    record_latency(client, "ollama", 0.1, every_s=60)
    assert client.llen(latency_key("claude")) == 1
    assert client.llen(latency_key("ollama")) == 1
