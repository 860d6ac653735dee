"""Every call has a wall-clock bound, whatever its SDK does per read.

Each adapter's ``timeout`` is per socket read: a provider that sends its answer one byte at a time
holds the call far past it. The runner bounds the whole call instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aipool.attempt.bound import within
from aipool.chains import default_model
from aipool.contract.request import parse_request
from aipool.errors import ProviderTimeout
from aipool.providers.claude import ClaudeProvider
from aipool.providers.endpoint import ProviderEndpoint
from aipool.providers.gemini import GeminiProvider
from aipool.providers.nemotron import NemotronProvider
from aipool.providers.ollama import OllamaProvider

ADAPTERS = {
    "ollama": (OllamaProvider, "ollama"),
    "gemini": (GeminiProvider, "gemini"),
    "claude": (ClaudeProvider, "anthropic"),
    "nemotron": (NemotronProvider, "openai"),
}
REQUEST = parse_request({"prompt": "Why is the api slow?"})


@pytest.fixture(params=list(ADAPTERS))
def trickling(request, healthy) -> Iterator[tuple[str, Any]]:  # type: ignore[no-untyped-def]
    """Each adapter, with a per-read timeout of 1 s, against a provider that trickles its answer
    one byte every 50 ms (each read gets data in time; the whole answer takes seconds)."""
    provider = request.param
    cls, kind = ADAPTERS[provider]
    healthy.set_fault(provider, "trickle", ms=50)
    impl = cls(ProviderEndpoint(provider, healthy.base_urls[kind], timeout_s=1.0))
    yield provider, impl
    impl.close()
    healthy.heal(provider)


def test_a_trickling_answer_is_cut_at_the_calls_bound(trickling: tuple[str, Any]) -> None:
    # Given a provider whose answer arrives one byte every 50 ms (several seconds in all)
    provider, impl = trickling
    started = time.monotonic()
    # When the call is bounded to 1 s of wall-clock time
    with pytest.raises(ProviderTimeout, match="no whole answer within 1 s"):
        within(
            1.0, lambda: impl.complete(REQUEST, default_model(provider), timeout_s=1.0), provider
        )
    # Then it ends at the bound, a timeout of that provider
    assert time.monotonic() - started < 1.5


def test_a_bound_away_from_the_main_thread_still_ends_the_wait() -> None:
    # Given a call that blocks for 3 s, made from a thread (no interval timer there)
    outcome: dict[str, Any] = {}

    def caller() -> None:
        started = time.monotonic()
        try:
            within(0.3, lambda: time.sleep(3), "slow")
        except ProviderTimeout as exc:
            outcome["error"] = exc
        outcome["took"] = time.monotonic() - started

    thread = threading.Thread(target=caller)
    thread.start()
    thread.join(5)
    # Then the caller stops waiting at the bound
    assert isinstance(outcome.get("error"), ProviderTimeout)
    assert outcome["took"] < 1.0


def test_a_call_within_its_bound_answers_and_leaves_no_timer() -> None:
    import signal

    assert within(1.0, lambda: "answer", "fast") == "answer"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
