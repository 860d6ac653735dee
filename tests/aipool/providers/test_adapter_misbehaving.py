"""Each adapter against a provider that misbehaves: echoed keys, hangs, broken usage and tool calls.

Every test runs once per adapter against its simulated provider.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aipool.chains import default_model
from aipool.contract.request import Message, Request, parse_request
from aipool.errors import (
    ProviderAuthError,
    ProviderBadResponse,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderRejected,
    ProviderServerError,
    ProviderTimeout,
    UnusableAnswer,
)
from aipool.providers import claude, gemini, nemotron, ollama
from aipool.providers.base import UnsendableRequest, building_request
from aipool.providers.endpoint import ProviderEndpoint
from aipool.scrub import forget_configured_secrets
from aipool.simulator import Simulator
from tests.support.requests import POD_LOGS_TOOL

#: provider: (adapter module, adapter class, simulator kind)
ADAPTERS: dict[str, tuple[Any, str, str]] = {
    "ollama": (ollama, "OllamaProvider", "ollama"),
    "gemini": (gemini, "GeminiProvider", "gemini"),
    "claude": (claude, "ClaudeProvider", "anthropic"),
    "nemotron": (nemotron, "NemotronProvider", "openai"),
}
PROVIDERS = list(ADAPTERS)
#: A key of no known shape: only the configured value can catch it, no pattern would.
PLANTED = "correct-horse-battery-staple-7f3a"
KEY_VARIABLES = ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "OLLAMA_API_KEY")
HELLO = parse_request({"prompt": "Why is the api slow?"})

Build = Callable[[str, float], Any]


@pytest.fixture
def build(healthy: Simulator) -> Iterator[Build]:
    """Build ``provider``'s adapter against its simulator with a provider timeout of ``timeout_s``."""
    built: list[Any] = []

    def make(provider: str, timeout_s: float = 2.0) -> Any:
        module, name, kind = ADAPTERS[provider]
        impl = getattr(module, name)(
            ProviderEndpoint(provider, healthy.base_urls[kind], timeout_s=timeout_s)
        )
        built.append(impl)
        return impl

    yield make
    for impl in built:
        impl.close()


@pytest.fixture
def planted_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Given every provider key configured as :data:`PLANTED` (the ollama client sends its own)."""
    for name in KEY_VARIABLES:
        monkeypatch.setenv(name, PLANTED)
    forget_configured_secrets()
    yield PLANTED
    forget_configured_secrets()


# -- keys echoed back ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("status", "error"), [(401, ProviderAuthError), (500, ProviderServerError)]
)
def test_given_a_provider_echoing_the_key_when_called_then_the_error_never_holds_it(
    build: Build,
    healthy: Simulator,
    planted_key: str,
    provider: str,
    status: int,
    error: type[Exception],
) -> None:
    # Given a provider whose error body repeats the key the request carried
    impl = build(provider)
    healthy.set_fault(provider, "echo_key", status=status)
    # When the adapter calls it
    with pytest.raises(error) as caught:
        impl.complete(HELLO, default_model(provider))
    # Then the error classifies the status, and neither its message nor its args hold the key
    assert planted_key not in str(caught.value)
    assert planted_key not in repr(caught.value.args)
    assert caught.value.status == status  # type: ignore[attr-defined]


# -- deadlines bound calls ----------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("provider_timeout_s", "timeout_s"),
    [(30.0, 0.3), (0.3, 30.0)],
    ids=["short-deadline", "long-deadline"],
)
def test_given_a_hanging_provider_then_the_call_ends_at_the_shorter_of_deadline_and_timeout(
    build: Build, healthy: Simulator, provider: str, provider_timeout_s: float, timeout_s: float
) -> None:
    # Given a provider that holds every request for 3 s
    impl = build(provider, provider_timeout_s)
    healthy.set_fault(provider, "hang", seconds=3)
    # When the call gets the time left of a deadline that is shorter (or longer) than the
    # provider's own timeout
    # Then it times out at the shorter one (well before the provider would have answered)
    with pytest.raises(ProviderTimeout):
        impl.complete(HELLO, default_model(provider), timeout_s=timeout_s)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_a_slow_provider_and_a_short_deadline_then_the_call_times_out(
    build: Build, healthy: Simulator, provider: str
) -> None:
    impl = build(provider, 30.0)
    healthy.set_fault(provider, "slow", ms=2000)
    with pytest.raises(ProviderTimeout):
        impl.complete(HELLO, default_model(provider), timeout_s=0.3)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_a_deadline_longer_than_the_answer_then_the_reused_client_answers(
    build: Build, healthy: Simulator, provider: str
) -> None:
    impl = build(provider, 30.0)
    healthy.set_fault(provider, "hang", seconds=3, times=1)
    with pytest.raises(ProviderTimeout):
        impl.complete(HELLO, default_model(provider), timeout_s=0.3)
    # The bound applied to that call only: the same client takes its next call as usual.
    assert impl.complete(HELLO, default_model(provider), timeout_s=10).text


# -- usage --------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_an_answer_without_usage_then_it_is_kept_and_charged_an_estimate(
    build: Build,
    healthy: Simulator,
    provider: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    impl = build(provider)
    healthy.set_fault(provider, "no_usage")
    with caplog.at_level(logging.WARNING, logger="aipool.providers"):
        completion = impl.complete(HELLO, default_model(provider))
    assert completion.text
    assert completion.input_tokens == HELLO.estimated_input_tokens()
    assert completion.output_tokens > 0
    assert any("estimate" in r.getMessage() and provider in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "usage",
    [
        {"output_tokens": -3},
        {"input_tokens": -1},
        {"output_tokens": 10 * 1024 + 1},
        {"input_tokens": 10_000_001},
    ],
    ids=["negative-output", "negative-input", "output-over-10x-max", "input-over-10M"],
)
def test_given_negative_or_absurd_usage_then_the_answer_is_refused_as_bad(
    build: Build, healthy: Simulator, provider: str, usage: dict[str, int]
) -> None:
    impl = build(provider)
    healthy.set_fault(provider, "bad_usage", **usage)
    with pytest.raises(ProviderBadResponse) as caught:
        impl.complete(HELLO, default_model(provider))  # max_tokens is the default 1024
    assert caught.value.counts_against_provider


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_usage_within_bounds_then_it_is_charged_as_reported(
    build: Build, healthy: Simulator, provider: str
) -> None:
    impl = build(provider)
    healthy.set_fault(provider, "bad_usage", input_tokens=9_000_000, output_tokens=10 * 1024)
    completion = impl.complete(HELLO, default_model(provider))
    assert (completion.input_tokens, completion.output_tokens) == (9_000_000, 10 * 1024)


# -- broken answers -----------------------------------------------------------------------------


@pytest.mark.parametrize("provider", [p for p in PROVIDERS if p != "nemotron"])
def test_given_a_string_where_the_api_documents_tool_arguments_as_an_object_the_answer_is_bad(
    build: Build, healthy: Simulator, provider: str
) -> None:
    # Ollama, Gemini and Claude send a call's arguments as a JSON object: a string cut short
    # there breaks the API's own schema, the provider's fault
    impl = build(provider)
    healthy.set_fault(provider, "bad_tool_args")
    request = parse_request({"prompt": "Show me the logs of pod api-7", "tools": [POD_LOGS_TOOL]})
    with pytest.raises(ProviderBadResponse):
        impl.complete(request, default_model(provider))


def test_given_openai_tool_arguments_that_do_not_parse_the_answer_is_unusable_and_billed(
    build: Build, healthy: Simulator
) -> None:
    # OpenAI-compatible APIs pass the model's text on unchecked ("the model does not always
    # generate valid JSON"): the model's slip on this request, billed, not the provider's health
    impl = build("nemotron")
    healthy.set_fault("nemotron", "bad_tool_args")
    request = parse_request({"prompt": "Show me the logs of pod api-7", "tools": [POD_LOGS_TOOL]})
    with pytest.raises(UnusableAnswer) as caught:
        impl.complete(request, default_model("nemotron"))
    assert not caught.value.counts_against_provider
    assert caught.value.billed is not None and caught.value.billed.output_tokens > 0


TOOLS_REQUEST = parse_request({"prompt": "Show me the logs of pod api-7", "tools": [POD_LOGS_TOOL]})


def test_given_gemini_could_not_parse_the_models_call_the_answer_is_unusable_and_billed(
    build: Build, healthy: Simulator
) -> None:
    # Gemini's MALFORMED_FUNCTION_CALL: no content, only the prompt counted (an
    # OpenAI-compatible server's form of it, arguments that are no JSON object, is the test
    # above's)
    impl = build("gemini")
    healthy.set_fault("gemini", "malformed_call")
    with pytest.raises(UnusableAnswer) as caught:
        impl.complete(TOOLS_REQUEST, default_model("gemini"))
    # Then the model's slip on this request: the next provider, never against this one
    assert type(caught.value) is UnusableAnswer and not caught.value.counts_against_provider
    assert caught.value.billed is not None and caught.value.billed.input_tokens > 0
    assert caught.value.billed.output_tokens == 0 and caught.value.billed.tool_calls == []


@pytest.mark.parametrize(
    ("fault", "request_", "why"),
    [
        # Gemini says so itself (UNEXPECTED_TOOL_CALL); the other servers pass the call on
        pytest.param("unknown_tool", TOOLS_REQUEST, "did not offer", id="unknown-tool"),
        pytest.param("unknown_tool", HELLO, "did not offer", id="unknown-tool-none-offered"),
        # get_pod_logs requires "pod" and "lines": "validate the arguments in your code" (OpenAI's
        # API reference); no server checks them
        pytest.param(
            "missing_argument", TOOLS_REQUEST, "leaves out the required 'pod'", id="no-argument"
        ),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_a_call_the_producer_cannot_run_the_answer_is_unusable(
    build: Build, healthy: Simulator, provider: str, fault: str, request_: Request, why: str
) -> None:
    # Given a model that calls a function the producer never offered, or leaves out an argument
    # the function requires
    impl = build(provider)
    healthy.set_fault(provider, fault)
    with pytest.raises(UnusableAnswer) as caught:
        impl.complete(request_, default_model(provider))
    # Then the producer never gets a call it cannot run; billed, never against the provider
    assert type(caught.value) is UnusableAnswer and not caught.value.counts_against_provider
    assert why in str(caught.value)
    assert caught.value.billed is not None and caught.value.billed.output_tokens > 0


@pytest.mark.parametrize("provider", ["nemotron", "ollama"])
def test_given_a_call_left_in_the_text_the_answer_is_unusable(
    build: Build, healthy: Simulator, provider: str
) -> None:
    # Given a server whose tool-call parser did not read the model's call: it comes as the
    # answer's text (<TOOLCALL>[...] from a NIM, <toolcall> from Ollama), no call beside it
    impl = build(provider)
    healthy.set_fault(provider, "unparsed_call")
    with pytest.raises(UnusableAnswer) as caught:
        impl.complete(TOOLS_REQUEST, default_model(provider))
    # Then the producer never gets the call's markup as its answer; billed, never counted
    assert type(caught.value) is UnusableAnswer and not caught.value.counts_against_provider
    assert "wrote its call as text" in str(caught.value)
    assert caught.value.billed is not None and caught.value.billed.output_tokens > 0


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_a_body_cut_short_then_the_answer_is_bad(
    build: Build, healthy: Simulator, provider: str
) -> None:
    impl = build(provider)
    healthy.set_fault(provider, "malformed", body="json")
    with pytest.raises(ProviderBadResponse):
        impl.complete(HELLO, default_model(provider))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_a_429_with_retry_after_then_rate_limited_carries_it(
    build: Build, healthy: Simulator, provider: str
) -> None:
    impl = build(provider)
    healthy.set_fault(provider, "rate_limit", retry_after=7)
    with pytest.raises(ProviderRateLimited) as caught:
        impl.complete(HELLO, default_model(provider))
    assert caught.value.retry_after == 7


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_a_529_then_the_provider_is_overloaded(
    build: Build, healthy: Simulator, provider: str
) -> None:
    impl = build(provider)
    healthy.set_fault(provider, "overloaded", status=529)
    with pytest.raises(ProviderOverloaded):
        impl.complete(HELLO, default_model(provider))


# -- requests that cannot be sent ---------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_text_no_encoder_takes_then_the_request_is_rejected_without_blaming_the_provider(
    build: Build, healthy: Simulator, provider: str
) -> None:
    # Given a request whose text holds a lone surrogate (built directly: the parser refuses it)
    impl = build(provider)
    request = Request(messages=(Message(role="user", content="broken \ud800 text"),))
    # When the adapter tries to send it
    with pytest.raises(ProviderRejected) as caught:
        impl.complete(request, default_model(provider))
    # Then it is rejected, and that says nothing about the provider's health
    assert not caught.value.counts_against_provider
    # google-genai escapes the text and the provider refuses it; the others never send it.
    assert healthy.calls(ADAPTERS[provider][2]) == (1 if provider == "gemini" else 0)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_given_an_error_while_building_the_call_then_it_is_a_rejection(provider: str) -> None:
    module = ADAPTERS[provider][0]
    with pytest.raises(UnsendableRequest) as caught, building_request():
        raise TypeError("not serialisable")
    error = module.map_error(caught.value)
    assert isinstance(error, ProviderRejected)
    assert not error.counts_against_provider
