"""The simulator speaks what real providers send besides a clean answer (``safety``, ``refusal``,
``thinking_exhausted``, ``prompt_blocked``, ``rate_limited``, ``model_missing``, ``account_refused``,
``cache_1h``), each
in its provider's shape, and what a server that is not the provider answers at a wrong base URL
(``method_not_allowed``): every fault is read here through the provider's real adapter, as the pool
meets it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from aipool.chains import default_model
from aipool.contract.request import parse_request
from aipool.errors import (
    ContentBlocked,
    EmptyAnswer,
    ModelRefused,
    PromptBlocked,
    ProviderAuthError,
    ProviderError,
    ProviderModelMissing,
    ProviderRateLimited,
    ProviderRejected,
    ProviderToolsUnsupported,
    UnusableAnswer,
)
from aipool.prices.table import completion_cost
from aipool.providers import claude, gemini, nemotron, ollama
from aipool.providers.endpoint import ProviderEndpoint
from aipool.providers.retry_delay import until_quota_day_ends
from aipool.simulator import InvalidFault, Simulator
from tests.support.requests import POD_LOGS_TOOL

ADAPTERS: dict[str, tuple[Any, str]] = {
    "ollama": (ollama.OllamaProvider, "ollama"),
    "gemini": (gemini.GeminiProvider, "gemini"),
    "claude": (claude.ClaudeProvider, "anthropic"),
    "nemotron": (nemotron.NemotronProvider, "openai"),
}
REQUEST = parse_request({"prompt": "Why is the api slow?", "max_tokens": 200})


@pytest.fixture
def call(sim: Simulator) -> Iterator[Any]:
    """Call ``provider`` through its adapter against the simulator, with fault ``kind`` set."""
    built: list[Any] = []

    def make(provider: str, kind: str, request: Any = REQUEST, **options: Any) -> Any:
        cls, wire = ADAPTERS[provider]
        adapter = cls(ProviderEndpoint(provider, sim.base_urls[wire], timeout_s=5))
        built.append(adapter)
        sim.set_fault(provider, kind, **options)
        return adapter.complete(request, default_model(provider))

    yield make
    for adapter in built:
        adapter.close()


def _raises(
    call: Any, provider: str, kind: str, request: Any = REQUEST, **options: Any
) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        call(provider, kind, request, **options)
    return raised.value


@pytest.mark.parametrize(
    ("provider", "kind", "error"),
    [
        ("gemini", "safety", ContentBlocked),
        ("claude", "safety", ModelRefused),
        ("nemotron", "safety", ContentBlocked),
        ("ollama", "safety", EmptyAnswer),
        ("gemini", "refusal", ContentBlocked),
        ("claude", "refusal", ModelRefused),
        ("nemotron", "refusal", ModelRefused),
        ("ollama", "refusal", EmptyAnswer),
    ],
)
def test_a_withheld_or_refused_answer_is_unusable_and_billed(
    call: Any, provider: str, kind: str, error: type[UnusableAnswer]
) -> None:
    raised = _raises(call, provider, kind)
    assert type(raised) is error
    assert isinstance(raised, UnusableAnswer) and raised.billed is not None
    # the simulated model generated its answer, and the provider billed it
    assert raised.billed.input_tokens > 0 and raised.billed.output_tokens > 0
    assert not raised.counts_against_provider


@pytest.mark.parametrize("provider", list(ADAPTERS))
def test_thinking_that_used_the_output_budget_is_an_empty_answer_billed_in_full(
    call: Any, provider: str
) -> None:
    raised = _raises(call, provider, "thinking_exhausted")
    assert isinstance(raised, EmptyAnswer) and raised.billed is not None
    assert raised.billed.output_tokens == REQUEST.max_tokens


def test_gemini_blocks_the_prompt_with_prompt_feedback(call: Any) -> None:
    raised = _raises(call, "gemini", "prompt_blocked")
    assert isinstance(raised, PromptBlocked) and raised.billed is not None
    assert raised.billed.input_tokens > 0 and raised.billed.output_tokens == 0


def test_nemotron_blocks_the_prompt_with_the_content_filters_400(call: Any) -> None:
    # The OpenAI-compatible content filter's documented refusal: nothing generated or billed
    raised = _raises(call, "nemotron", "prompt_blocked")
    assert isinstance(raised, PromptBlocked) and raised.billed is None
    assert not raised.counts_against_provider


@pytest.mark.parametrize("provider", ["claude", "ollama"])
def test_the_others_refuse_a_blocked_prompt_with_a_400(call: Any, provider: str) -> None:
    assert isinstance(_raises(call, provider, "prompt_blocked"), ProviderRejected)


@pytest.mark.parametrize("provider", list(ADAPTERS))
def test_a_429_declares_its_delay_as_the_provider_does(call: Any, provider: str) -> None:
    raised = _raises(call, provider, "rate_limited", retry_delay=20)
    assert isinstance(raised, ProviderRateLimited)
    assert raised.retry_after == 20.0


def test_gemini_names_a_spent_daily_quota_and_the_pause_runs_to_its_reset(call: Any) -> None:
    # Given Gemini's 429 for a spent daily quota: QuotaFailure GenerateRequestsPerDay..., and a
    # retryDelay of seconds beside it
    raised = _raises(call, "gemini", "rate_limited", retry_delay=20, quota="day")
    # Then the pause runs to the quota's reset, midnight Pacific time (the simulator's Date)
    reset = until_quota_day_ends(None)
    assert isinstance(raised, ProviderRateLimited) and raised.retry_after and reset
    assert abs(raised.retry_after - reset) <= 5


def test_a_spent_quota_is_the_minutes_or_the_days(sim: Simulator) -> None:
    with pytest.raises(InvalidFault, match="quota must be 'minute' or 'day'"):
        sim.set_fault("gemini", "rate_limited", quota="month")


@pytest.mark.parametrize("provider", list(ADAPTERS))
def test_a_missing_model_is_said_in_the_providers_words(call: Any, provider: str) -> None:
    raised = _raises(call, provider, "model_missing")
    assert isinstance(raised, ProviderModelMissing)
    assert default_model(provider) in str(raised)


@pytest.mark.parametrize(
    ("provider", "status"), [("gemini", 400), ("claude", 402), ("nemotron", 429), ("ollama", 401)]
)
def test_a_refused_account_is_said_as_the_provider_does_and_counts_against_it(
    call: Any, provider: str, status: int
) -> None:
    error = _raises(call, provider, "account_refused")
    assert isinstance(error, ProviderAuthError) and error.code == "auth_error"
    assert error.status == status and error.counts_against_provider


def test_claude_says_the_accounts_spend_limit_is_reached_in_a_400_that_counts(
    call: Any,
) -> None:
    # Anthropic's 400 invalid_request_error "You have reached your specified API usage limits":
    # every call fails so until the month ends, so it is the account's, never the request's
    error = _raises(call, "claude", "account_refused", spend_limit=True)
    assert isinstance(error, ProviderAuthError) and error.counts_against_provider
    assert error.status == 400 and "regain access on" in str(error)


def test_spend_limit_is_true_or_false(sim: Simulator) -> None:
    with pytest.raises(InvalidFault, match="spend_limit must be true or false"):
        sim.set_fault("claude", "account_refused", spend_limit="yes")


TOOLS_REQUEST = parse_request(
    {"prompt": "Show me the logs of pod api-7", "tools": [POD_LOGS_TOOL], "max_tokens": 200}
)


@pytest.mark.parametrize("provider", ["nemotron", "ollama"])
def test_tools_a_model_cannot_call_are_the_pools_configuration_and_count(
    call: Any, provider: str
) -> None:
    # A NIM without a tool-call parser (vLLM's 400), an Ollama model without tool support
    error = _raises(call, provider, "tools_unsupported", TOOLS_REQUEST)
    assert isinstance(error, ProviderToolsUnsupported) and error.code == "tools_unsupported"
    assert error.status == 400 and error.counts_against_provider


@pytest.mark.parametrize("provider", list(ADAPTERS))
def test_tools_unsupported_leaves_a_request_without_tools_its_answer(
    call: Any, provider: str
) -> None:
    assert call(provider, "tools_unsupported").text


@pytest.mark.parametrize("provider", ["gemini", "claude"])
def test_providers_whose_models_all_take_tools_answer_as_usual(call: Any, provider: str) -> None:
    assert call(provider, "tools_unsupported", TOOLS_REQUEST).tool_calls


def test_claude_writes_the_prompt_to_its_one_hour_cache(call: Any) -> None:
    # Given a conversation whose earlier turns Anthropic writes to its 1-hour cache
    request = parse_request(
        {
            "messages": [
                {"role": "user", "content": "Here is the runbook. " * 40},
                {"role": "assistant", "content": "Read it."},
                {"role": "user", "content": "Why is the api slow?"},
            ]
        }
    )
    # When Claude answers it
    completion = call("claude", "cache_1h", request)
    # Then the writes are read as 1-hour writes, each at 2x the input price
    assert completion.cache_write_tokens > 100
    assert completion.cache_write_1h_tokens == completion.cache_write_tokens
    plain = completion.input_tokens - completion.cache_write_tokens
    expected = (
        Decimal("0.016") * completion.cache_write_tokens
        + Decimal("0.008") * (plain + completion.output_tokens)
    ) / 1000
    assert completion_cost("claude", completion) == expected


@pytest.mark.parametrize("provider", ["gemini", "nemotron", "ollama"])
def test_providers_without_a_one_hour_cache_answer_as_usual(call: Any, provider: str) -> None:
    completion = call(provider, "cache_1h")
    assert completion.text and completion.cache_write_1h_tokens == 0


def test_a_delay_must_be_a_number_of_seconds(sim: Simulator) -> None:
    with pytest.raises(InvalidFault, match="retry_delay must be a non-negative number"):
        sim.set_fault("gemini", "rate_limited", retry_delay="soon")


@pytest.mark.parametrize("provider", list(ADAPTERS))
def test_a_405_from_a_server_that_is_not_the_provider_is_the_pools_url_and_counts(
    call: Any, provider: str
) -> None:
    # Given: the base URL points at a web server that refuses the call's POST (405 Not Allowed)
    error = _raises(call, provider, "method_not_allowed")
    # Then: the pool's URL, as a 404 naming no model is: counted, so the provider's breaker opens
    # and its alert names the URL (it read as a rejected request: never counted, never alerted)
    assert error.code == "not_found" and error.counts_against_provider
    assert error.status == 405
    assert "405" in str(error) and "<" not in str(error)
