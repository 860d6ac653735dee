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
from tests.support.resolver import slow_resolution

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
    one byte every 200 ms (each read gets data in time; the whole answer, some hundreds of bytes,
    takes a minute or more)."""
    provider = request.param
    cls, kind = ADAPTERS[provider]
    healthy.set_fault(provider, "trickle", ms=200)
    impl = cls(ProviderEndpoint(provider, healthy.base_urls[kind], timeout_s=1.0))
    yield provider, impl
    impl.close()
    healthy.heal(provider)


def test_a_trickling_answer_is_cut_at_the_calls_bound(trickling: tuple[str, Any]) -> None:
    # Given a provider whose answer arrives one byte every 200 ms (a minute or more in all)
    provider, impl = trickling
    started = time.monotonic()
    # When the call is bounded to 1 s of wall-clock time
    with pytest.raises(ProviderTimeout, match="no whole answer within 1 s"):
        within(
            1.0, lambda: impl.complete(REQUEST, default_model(provider), timeout_s=1.0), provider
        )
    # Then it ends at the bound, a timeout of that provider, long before the answer would have
    # (the margin is the answer's minute, not this machine's speed)
    assert time.monotonic() - started < 20


def test_a_bound_away_from_the_main_thread_still_ends_the_wait() -> None:
    # Given a call that blocks until released, made from a thread (no interval timer there)
    release = threading.Event()
    outcome: dict[str, Any] = {}

    def caller() -> None:
        try:
            within(0.3, lambda: release.wait(120), "slow")
        except ProviderTimeout as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=caller)
    thread.start()
    try:
        thread.join(60)
        # Then the caller stops waiting at the bound, while the call itself still blocks
        assert not thread.is_alive()
        assert isinstance(outcome.get("error"), ProviderTimeout)
    finally:
        release.set()


def test_a_call_within_its_bound_answers_and_leaves_no_timer() -> None:
    import signal
    import socket

    resolve = socket.getaddrinfo
    assert within(1.0, lambda: "answer", "fast") == "answer"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    # and the process's resolver as it found it
    assert socket.getaddrinfo is resolve


@pytest.mark.parametrize("thread", ["main", "helper"])
def test_a_host_name_that_resolves_slowly_is_cut_at_the_calls_bound(healthy, thread: str) -> None:  # type: ignore[no-untyped-def]
    # Given Ollama's base URL by a host name whose resolution takes 8 s, as glibc's resolver does
    # against a silent name server (a signal does not end its wait)
    url = healthy.base_urls["ollama"].replace("127.0.0.1", "stalled-dns.test")
    impl = OllamaProvider(ProviderEndpoint("ollama", url, timeout_s=1.0))
    outcome: dict[str, Any] = {}

    def call() -> None:
        started = time.monotonic()
        try:
            within(2.0, lambda: impl.complete(REQUEST, default_model("ollama")), "ollama")
        except ProviderTimeout as exc:
            outcome["error"] = exc
        outcome["took"] = time.monotonic() - started

    try:
        with slow_resolution("stalled-dns.test", 8.0):
            # When the call is bounded to 2 s, from the main thread (the interval timer) or from
            # another thread (the helper-thread fallback)
            if thread == "main":
                call()
            else:
                caller = threading.Thread(target=call)
                caller.start()
                caller.join(60)
    finally:
        impl.close()
    # Then it ends at its bound as a timeout, not when the name resolves (8 s)
    assert isinstance(outcome.get("error"), ProviderTimeout)
    assert outcome["took"] < 4.0, f"bound 2 s, the call took {outcome['took']:.1f} s"
