"""Each adapter against its simulated provider: answers, tool calls, and every fault's error class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aipool.chains import default_model
from aipool.contract.request import parse_request
from aipool.errors import (
    ProviderBadResponse,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderRejected,
    ProviderServerError,
    ProviderTimeout,
    ProviderUnreachable,
)
from aipool.providers.claude import ClaudeProvider
from aipool.providers.endpoint import ProviderEndpoint
from aipool.providers.gemini import GeminiProvider
from aipool.providers.nemotron import NemotronProvider
from aipool.providers.ollama import OllamaProvider
from tests.support.requests import POD_LOGS_TOOL

ADAPTERS = {
    "ollama": (OllamaProvider, "ollama"),
    "gemini": (GeminiProvider, "gemini"),
    "claude": (ClaudeProvider, "anthropic"),
    "nemotron": (NemotronProvider, "openai"),
}


@pytest.fixture(params=list(ADAPTERS))
def adapter(request, healthy) -> Iterator[tuple[str, Any]]:  # type: ignore[no-untyped-def]
    provider = request.param
    cls, kind = ADAPTERS[provider]
    endpoint = ProviderEndpoint(provider, healthy.base_urls[kind], timeout_s=1.0)
    impl = cls(endpoint)
    yield provider, impl
    impl.close()


def test_answers_with_text_and_usage(adapter) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    completion = impl.complete(
        parse_request({"prompt": "Why is the api slow?"}), default_model(provider)
    )
    assert completion.text
    assert completion.input_tokens > 0 and completion.output_tokens > 0
    assert completion.model == default_model(provider)
    assert completion.finish_reason == "stop"
    assert completion.tool_calls == []


def test_same_request_same_answer(adapter) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    request = parse_request({"prompt": "Summarise the incident", "system": "Be brief"})
    first = impl.complete(request, default_model(provider))
    second = impl.complete(request, default_model(provider))
    assert first.text == second.text


def test_returns_tool_calls_in_the_neutral_format(adapter) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    request = parse_request({"prompt": "Show me the logs of pod api-7", "tools": [POD_LOGS_TOOL]})
    completion = impl.complete(request, default_model(provider))
    assert completion.finish_reason == "tool_calls"
    [call] = completion.tool_calls
    assert call.name == "get_pod_logs"
    assert isinstance(call.arguments["lines"], int)
    assert isinstance(call.arguments["pod"], str)


def test_a_tool_result_turn_gets_a_text_answer(adapter) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    request = parse_request(
        {
            "messages": [
                {"role": "user", "content": "Show me the logs of pod api-7"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {"name": "get_pod_logs", "arguments": {"pod": "api-7", "lines": 5}}
                    ],
                },
                {"role": "tool", "name": "get_pod_logs", "content": "OOMKilled"},
            ],
            "tools": [POD_LOGS_TOOL],
        }
    )
    completion = impl.complete(request, default_model(provider))
    assert completion.tool_calls == []
    assert completion.text


@pytest.mark.parametrize(
    ("fault", "options", "error"),
    [
        ("down", {}, ProviderUnreachable),
        ("error_500", {}, ProviderServerError),
        ("rate_limit", {"retry_after": 7}, ProviderRateLimited),
        ("overloaded", {}, ProviderOverloaded),
        ("hang", {"seconds": 5}, ProviderTimeout),
        ("malformed", {}, ProviderBadResponse),
    ],
)
def test_each_fault_maps_to_its_error_class(adapter, healthy, fault, options, error) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    if fault == "overloaded" and provider != "claude":
        error = ProviderServerError  # only Anthropic answers 529; the others say 503
    healthy.set_fault(provider, fault, **options)
    with pytest.raises(error) as caught:
        impl.complete(parse_request({"prompt": "hello"}), default_model(provider))
    assert caught.value.counts_against_provider
    if fault == "rate_limit":
        assert caught.value.retry_after == 7  # type: ignore[attr-defined]


def test_slow_provider_still_answers_within_timeout(adapter, healthy) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    healthy.set_fault(provider, "slow", ms=200)
    completion = impl.complete(parse_request({"prompt": "hello"}), default_model(provider))
    assert completion.text


def test_a_request_the_provider_rejects_does_not_count_against_it(adapter, healthy) -> None:  # type: ignore[no-untyped-def]
    provider, impl = adapter
    healthy.set_fault(provider, "bad_request")
    with pytest.raises(ProviderRejected) as caught:
        impl.complete(parse_request({"prompt": "hello"}), default_model(provider))
    assert not caught.value.counts_against_provider
