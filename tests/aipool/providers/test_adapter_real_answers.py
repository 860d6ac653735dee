"""What real providers send besides a clean answer, read the way the hop runner reads it.

Each test serves a response in the shape the provider's API reference documents for the case
(Gemini's ``generateContent`` ``FinishReason``, ``promptFeedback`` and ``google.rpc.RetryInfo``;
Anthropic's ``stop_reason: "refusal"`` and ``usage.cache_creation``; OpenAI-compatible ``usage``,
``finish_reason: "content_filter"``, ``message.refusal`` and RFC 9457 problem documents; Ollama's
404 for a model not pulled) from a loopback server, calls it through the adapter's real SDK, and
checks the answer, the tokens, the cost and the error class: an empty, withheld or refused answer
is never a success, every billed token is carried to be booked, a declared retry delay is read
wherever the provider puts it, and a missing model is the pool's fault.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from aipool.contract.request import parse_request
from aipool.errors import (
    ContentBlocked,
    EmptyAnswer,
    ModelRefused,
    PromptBlocked,
    ProviderModelMissing,
    ProviderRateLimited,
)
from aipool.prices.table import completion_cost
from aipool.providers import gemini
from tests.support.canned import CLAUDE, GEMINI, HELLO, NEMOTRON, serve
from tests.support.canned import adapter as make_adapter
from tests.support.canned import answer as _call
from tests.support.canned import billed as _billed
from tests.support.canned import raised as _raised

# -- Gemini generateContent -------------------------------------------------------------------

SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
]


def test_gemini_candidate_blocked_for_safety_is_blocked_and_booked(canned: Any) -> None:
    # Given: finishReason SAFETY with an empty content object, the prompt billed
    body = {
        "candidates": [
            {
                "content": {},
                "finishReason": "SAFETY",
                "index": 0,
                "safetyRatings": SAFETY_RATINGS,
            }
        ],
        "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
        "modelVersion": GEMINI,
    }
    # When
    error = _raised(canned, "gemini", GEMINI, body)
    # Then: a withheld answer, not an empty success, and not the provider's fault
    assert isinstance(error, ContentBlocked)
    assert error.code == "content_blocked" and "SAFETY" in str(error)
    assert not error.counts_against_provider
    assert _billed(error) == (12, 0)


@pytest.mark.parametrize(
    "content",
    [{"content": {"role": "model"}}, {}],
    ids=["content-without-parts", "no-content-at-all"],
)
def test_gemini_answer_withheld_after_generation_books_what_it_billed(
    canned: Any, content: dict[str, Any]
) -> None:
    # Given: the recorded case: RECITATION after generating, 19 input and 33 output billed (with
    # no content at all the adapter once called it "answer without candidates", billed nothing
    # and counted it against Gemini)
    body = {
        "candidates": [
            {
                **content,
                "finishReason": "RECITATION",
                "index": 0,
                "citationMetadata": {"citationSources": [{"startIndex": 0, "endIndex": 120}]},
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 19,
            "candidatesTokenCount": 33,
            "totalTokenCount": 52,
        },
    }
    # When
    error = _raised(canned, "gemini", GEMINI, body)
    # Then: every billed token is carried, at the provider's price ($0.001/1K both ways)
    assert isinstance(error, ContentBlocked) and "RECITATION" in str(error)
    assert _billed(error) == (19, 33)
    assert error.billed is not None
    assert completion_cost("gemini", error.billed) == Decimal("0.000052")


def test_gemini_prompt_blocked_before_generation_is_not_a_provider_failure(canned: Any) -> None:
    # Given: no candidates, promptFeedback.blockReason (Google: "If set, the prompt was blocked
    # and no candidates are returned")
    body = {
        "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": SAFETY_RATINGS},
        "usageMetadata": {"promptTokenCount": 8, "totalTokenCount": 8},
        "modelVersion": GEMINI,
    }
    # When
    error = _raised(canned, "gemini", GEMINI, body)
    # Then: the message says the prompt was blocked; the breaker never hears of it
    assert isinstance(error, PromptBlocked)
    assert "prompt was blocked (SAFETY" in str(error)
    assert not error.counts_against_provider
    assert _billed(error) == (8, 0)


def test_gemini_thinking_that_used_the_whole_output_budget_is_an_empty_answer(
    canned: Any,
) -> None:
    # Given: MAX_TOKENS, content without parts, usage with only the prompt and the thinking
    body = {
        "candidates": [{"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": 9,
            "thoughtsTokenCount": 61,
            "totalTokenCount": 70,
        },
    }
    request = parse_request({"prompt": "Why is the api slow?", "max_tokens": 64})
    # When
    error = _raised(canned, "gemini", GEMINI, body, request=request)
    # Then: empty, and the thinking is billed as output
    assert isinstance(error, EmptyAnswer)
    assert _billed(error) == (9, 61)
    assert error.billed is not None and error.billed.thinking_tokens == 61


#: Google's words for a spent quota, the first sentence of every such 429.
QUOTA_WORDS = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)


def _resource_exhausted(
    message: str, violation: dict[str, Any], retry_delay: str, *extra: dict[str, Any]
) -> dict[str, Any]:
    """Gemini's 429: the quota spent in a QuotaFailure, the delay in a RetryInfo, no header."""
    quota = {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [violation]}
    delay = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
    details = [quota, *extra, delay]
    return {
        "error": {
            "code": 429,
            "message": message,
            "status": "RESOURCE_EXHAUSTED",
            "details": details,
        }
    }


FREE_TIER_REQUESTS = "generativelanguage.googleapis.com/generate_content_free_tier_requests"


def test_gemini_429_declares_its_delay_in_the_body(canned: Any) -> None:
    # Given: RESOURCE_EXHAUSTED with a RetryInfo detail and no Retry-After header
    body = _resource_exhausted(
        QUOTA_WORDS,
        {
            "quotaMetric": FREE_TIER_REQUESTS,
            "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            "quotaValue": "10",
        },
        "58s",
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [{"description": "Learn more about Gemini API quotas"}],
        },
    )
    # When
    error = _raised(canned, "gemini", GEMINI, body, status=429)
    # Then: the delay is read, and the message carries Google's own words
    assert isinstance(error, ProviderRateLimited)
    assert error.retry_after == 58.0
    assert "RESOURCE_EXHAUSTED" in str(error) and "exceeded your current quota" in str(error)


def test_gemini_429_for_a_spent_daily_quota_pauses_until_the_quota_resets(canned: Any) -> None:
    # Given: the free tier's daily quota spent, as Google answers it (OmniRoute#9504's recorded
    # body): QuotaFailure names GenerateRequestsPerDay..., and RetryInfo still says 36 s, after
    # which every call gets the same 429 until the quota resets "at midnight Pacific time"
    # (ai.google.dev/gemini-api/docs/rate-limits)
    body = _resource_exhausted(
        f"{QUOTA_WORDS} \n* Quota exceeded for metric: {FREE_TIER_REQUESTS}, limit: 20, model: "
        "gemini-2.5-flash\nPlease retry in 36.429760048s.",
        {
            "quotaMetric": FREE_TIER_REQUESTS,
            "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            "quotaDimensions": {"location": "global", "model": GEMINI},
            "quotaValue": "20",
        },
        "36s",
    )
    served = serve(canned, body, status=429)
    # 22:00 in Taipei, 06:00 in California (PST): the quota comes back in 18 hours
    served.date = "Mon, 07 Dec 2026 14:00:00 GMT"
    impl = make_adapter("gemini", served.url)
    try:
        with pytest.raises(ProviderRateLimited) as caught:
            impl.complete(HELLO, GEMINI, timeout_s=5)
    finally:
        impl.close()
    # Then: the pause the provider needs is until the reset (the pool caps it at
    # AIPOOL_RATE_LIMIT_PAUSE_MAX_S), not 36 s after which the next call meets the same 429
    assert caught.value.retry_after == 18 * 3600.0


def test_gemini_model_not_found_is_a_missing_model(canned: Any) -> None:
    body = {
        "error": {
            "code": 404,
            "message": "models/gemini-2.5-flush is not found for API version v1beta, or is not "
            "supported for generateContent. Call ListModels to see the list of available "
            "models and their supported methods.",
            "status": "NOT_FOUND",
        }
    }
    error = _raised(canned, "gemini", "gemini-2.5-flush", body, status=404)
    assert isinstance(error, ProviderModelMissing)
    assert error.counts_against_provider
    assert "gemini-2.5-flush is not found" in str(error)


def test_gemini_total_larger_than_its_parts_is_billed(canned: Any) -> None:
    # Given: a total above prompt + candidates + thoughts
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 20,
            "totalTokenCount": 45,
        },
    }
    completion = _call(canned, "gemini", GEMINI, body)
    # Then: the larger figure is charged, the difference as output
    assert (completion.input_tokens, completion.output_tokens) == (10, 35)


@pytest.mark.parametrize(
    ("model", "budget", "sent"),
    [
        (GEMINI, 512, 512),
        (GEMINI, 0, 0),
        ("gemini-2.5-pro", 0, gemini.PRO_MIN_THINKING),
        ("gemini-2.5-flash-lite", 100, 0),
        ("gemini-2.0-flash", 512, None),
        (GEMINI, None, None),
    ],
)
def test_gemini_is_sent_the_routes_thinking_budget_where_the_model_takes_one(
    canned: Any, model: str, budget: int | None, sent: int | None
) -> None:
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 1, "totalTokenCount": 4},
    }
    server = serve(canned, body)
    adapter = make_adapter("gemini", server.url)
    adapter.complete(HELLO, model, thinking_budget=budget)
    adapter.close()
    config = server.requests[0].get("generationConfig", {})
    thinking = config.get("thinkingConfig") or config.get("thinking_config")
    if sent is None:
        assert thinking is None
    else:
        assert thinking[
            "thinkingBudget" if "thinkingBudget" in thinking else "thinking_budget"
        ] == (sent)


# -- Anthropic Messages -----------------------------------------------------------------------


def _message(**fields: Any) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE,
        "stop_sequence": None,
        **fields,
    }


def test_claude_refusal_stop_is_a_refusal_booked_with_its_input(canned: Any) -> None:
    # Given: stop_reason "refusal" with empty content; the input billed
    body = _message(
        content=[], stop_reason="refusal", usage={"input_tokens": 24, "output_tokens": 0}
    )
    # When
    error = _raised(canned, "claude", CLAUDE, body)
    # Then
    assert isinstance(error, ModelRefused)
    assert error.code == "model_refused" and not error.counts_against_provider
    assert _billed(error) == (24, 0)
    assert error.billed is not None
    assert completion_cost("claude", error.billed) == Decimal("0.000192")


def test_claude_one_hour_cache_writes_are_priced_at_their_own_rate(canned: Any) -> None:
    # Given: 2,000 tokens written to the cache, 1,500 of them for an hour (2x input), 500 for
    # five minutes (1.25x); 50 uncached input and 10 output tokens
    body = _message(
        content=[{"type": "text", "text": "ok"}],
        stop_reason="end_turn",
        usage={
            "input_tokens": 50,
            "cache_creation_input_tokens": 2000,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 1500},
            "output_tokens": 10,
        },
    )
    # When
    completion = _call(canned, "claude", CLAUDE, body)
    # Then: 50 x 0.008 + 500 x 0.01 + 1,500 x 0.016 + 10 x 0.008, per 1K
    assert (completion.input_tokens, completion.output_tokens) == (2050, 10)
    assert (completion.cache_write_tokens, completion.cache_write_1h_tokens) == (2000, 1500)
    assert completion_cost("claude", completion) == Decimal("0.02948")


def test_claude_429_retry_after_is_read_and_its_words_kept(canned: Any) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "This request would exceed your organization's rate limit of 50 "
            "requests per minute.",
        },
    }
    error = _raised(canned, "claude", CLAUDE, body, status=429, headers={"retry-after": "20"})
    assert isinstance(error, ProviderRateLimited) and error.retry_after == 20.0
    assert "rate_limit_error: This request would exceed" in str(error)


@pytest.mark.parametrize(
    ("provider", "model", "body"),
    [
        (
            "claude",
            CLAUDE,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "x"}},
        ),
        # Ollama behind a gateway that limits it: the gateway's own 429 page
        ("ollama", "llama3.2:3b", "<html><head><title>429 Too Many Requests</title></head></html>"),
    ],
    ids=["claude", "ollama-behind-a-gateway"],
)
def test_a_retry_after_given_as_an_http_date_is_read_against_the_answers_date(
    canned: Any, provider: str, model: str, body: Any
) -> None:
    # RFC 9110, 10.2.3: Retry-After is delay-seconds or an HTTP-date. The delay is the date less
    # the answer's own Date (the same server's clock), so this host's clock does not matter.
    headers = {"retry-after": "Mon, 07 Dec 2026 10:00:20 GMT"}
    served = serve(canned, body, status=429, headers=headers)
    served.date = "Mon, 07 Dec 2026 10:00:00 GMT"
    impl = make_adapter(provider, served.url)
    try:
        with pytest.raises(ProviderRateLimited) as caught:
            impl.complete(HELLO, model, timeout_s=5)
    finally:
        impl.close()
    assert caught.value.retry_after == 20.0


def test_claude_model_not_found_is_a_missing_model(canned: Any) -> None:
    body = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-9"}}
    error = _raised(canned, "claude", "claude-9", body, status=404)
    assert isinstance(error, ProviderModelMissing) and error.counts_against_provider


@pytest.mark.parametrize(
    ("model", "prompt", "sent"),
    [
        (CLAUDE, {"max_tokens": 4096}, {"type": "enabled", "budget_tokens": 2048}),
        (CLAUDE, {"max_tokens": 1024}, None),  # 512 is below Anthropic's minimum budget
        ("claude-3-5-haiku-20241022", {"max_tokens": 4096}, None),  # takes no thinking
    ],
)
def test_claude_is_sent_extended_thinking_where_the_model_and_request_allow(
    canned: Any, model: str, prompt: dict[str, Any], sent: dict[str, Any] | None
) -> None:
    body = _message(
        content=[{"type": "text", "text": "ok"}],
        stop_reason="end_turn",
        usage={"input_tokens": 5, "output_tokens": 1},
    )
    server = serve(canned, body)
    adapter = make_adapter("claude", server.url)
    request = parse_request({"prompt": "Why is the api slow?", **prompt})
    adapter.complete(request, model, thinking_budget=request.max_tokens // 2)
    adapter.close()
    assert server.requests[0].get("thinking") == sent


def test_a_request_with_a_temperature_is_answered_by_claude_which_is_sent_none(
    canned: Any,
) -> None:
    # Given a request that sets a temperature (the others honour it). API version 2026-10-21,
    # which the anthropic SDK 2.x sends, refuses temperature, top_p and top_k with a 400 even at
    # their defaults, and the SDK's create() no longer takes them: on the adapter that passed it,
    # every such request raised TypeError, was classed a bad response and counted against
    # Claude's breaker.
    body = _message(
        content=[{"type": "text", "text": "Because."}],
        stop_reason="end_turn",
        usage={"input_tokens": 10, "output_tokens": 3},
    )
    server = serve(canned, body)
    adapter = make_adapter("claude", server.url)
    request = parse_request({"prompt": "Why?", "max_tokens": 4096, "temperature": 0.2})
    # When Claude is called, with a thinking budget
    completion = adapter.complete(request, CLAUDE, thinking_budget=2048)
    adapter.close()
    # Then it answers: no temperature is sent, and thinking is asked as for any request
    assert completion.text == "Because."
    sent = server.requests[0]
    assert "temperature" not in sent
    assert sent.get("thinking") == {"type": "enabled", "budget_tokens": 2048}


# -- OpenAI-compatible chat completions (NVIDIA) -----------------------------------------------


def _chat(message: dict[str, Any], finish: str, usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1741569952,
        "model": NEMOTRON,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
    }


def test_openai_total_above_its_parts_is_booked_as_the_larger(canned: Any) -> None:
    # Given: the recorded case: total_tokens 109, prompt 19 + completion 28 = 47
    body = _chat(
        {"role": "assistant", "content": "ok"},
        "stop",
        {"prompt_tokens": 19, "completion_tokens": 28, "total_tokens": 109},
    )
    completion = _call(canned, "nemotron", NEMOTRON, body)
    # Then: the 62 hidden tokens are billed as output
    assert (completion.input_tokens, completion.output_tokens) == (19, 90)


def test_openai_content_filter_is_blocked(canned: Any) -> None:
    body = _chat(
        {"role": "assistant", "content": None},
        "content_filter",
        {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
    )
    error = _raised(canned, "nemotron", NEMOTRON, body)
    assert isinstance(error, ContentBlocked) and _billed(error) == (30, 4)


def test_openai_refusal_is_a_refusal(canned: Any) -> None:
    body = _chat(
        {"role": "assistant", "content": None, "refusal": "I'm sorry, I cannot help with that."},
        "stop",
        {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
    )
    error = _raised(canned, "nemotron", NEMOTRON, body)
    assert isinstance(error, ModelRefused) and _billed(error) == (30, 9)
    # the model's words are not kept (no answer text is stored but as an answer)
    assert "sorry" not in str(error)


def test_openai_empty_message_is_an_empty_answer(canned: Any) -> None:
    body = _chat(
        {"role": "assistant", "content": ""},
        "length",
        {"prompt_tokens": 30, "completion_tokens": 64, "total_tokens": 94},
    )
    error = _raised(canned, "nemotron", NEMOTRON, body)
    assert isinstance(error, EmptyAnswer) and _billed(error) == (30, 64)


def test_nvidia_429_problem_document_keeps_its_words_and_reset(canned: Any) -> None:
    # Given: NVIDIA's problem document (no "error" object) and OpenAI-style reset headers
    body = {"status": 429, "title": "Too Many Requests", "detail": "Rate limit exceeded"}
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "20s",
        "x-ratelimit-remaining-tokens": "3990",
        "x-ratelimit-reset-tokens": "6m0s",
    }
    error = _raised(canned, "nemotron", NEMOTRON, body, status=429, headers=headers)
    assert isinstance(error, ProviderRateLimited)
    assert str(error) == "nemotron HTTP 429: Too Many Requests: Rate limit exceeded"
    # the requests limit is the one spent: its reset is the delay
    assert error.retry_after == 20.0


def test_openai_model_not_found_is_a_missing_model(canned: Any) -> None:
    body = {
        "error": {
            "message": "The model `nvidia/nemotron-9` does not exist or you do not have access "
            "to it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }
    error = _raised(canned, "nemotron", "nvidia/nemotron-9", body, status=404)
    assert isinstance(error, ProviderModelMissing)


# -- Ollama /api/chat -------------------------------------------------------------------------


def test_ollama_model_not_pulled_counts_against_ollama(canned: Any) -> None:
    body = {"error": "model 'llama3.2:3b' not found, try pulling it first"}
    error = _raised(canned, "ollama", "llama3.2:3b", body, status=404)
    assert isinstance(error, ProviderModelMissing)
    assert error.counts_against_provider
    assert "llama3.2:3b" in str(error)


def test_ollama_thinking_only_answer_is_empty(canned: Any) -> None:
    body = {
        "model": "qwen3:8b",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "", "thinking": "hmm " * 50},
        "done": True,
        "done_reason": "length",
        "prompt_eval_count": 26,
        "eval_count": 290,
    }
    request = parse_request({"prompt": "Why is the api slow?", "max_tokens": 290})
    error = _raised(canned, "ollama", "qwen3:8b", body, request=request)
    assert isinstance(error, EmptyAnswer) and _billed(error) == (26, 290)
