"""Every billed token counted: each adapter reads its provider's documented usage fields.

Each provider answers through its real SDK from a loopback stand-in that returns the provider's
documented response body, with every kind of billed token in it:

- Gemini (``usageMetadata``): ``thoughtsTokenCount`` is billed as output and counted outside
  ``candidatesTokenCount``; ``toolUsePromptTokenCount`` is input outside ``promptTokenCount``;
  ``cachedContentTokenCount`` is part of ``promptTokenCount`` (total = the four summed).
- Anthropic (``usage``): ``cache_creation_input_tokens`` and ``cache_read_input_tokens`` are
  prompt tokens reported apart from ``input_tokens``; ``output_tokens`` includes thinking
  (``output_tokens_details.thinking_tokens``).
- OpenAI-compatible NVIDIA (``usage``): ``prompt_tokens`` includes
  ``prompt_tokens_details.cached_tokens``; ``completion_tokens`` includes
  ``completion_tokens_details.reasoning_tokens``.
- Ollama: ``prompt_eval_count`` and ``eval_count`` (which counts a thinking model's thinking).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from aipool.contract.request import parse_request
from aipool.errors import EmptyAnswer
from aipool.prices.table import completion_cost
from aipool.providers import claude, gemini, nemotron, ollama
from aipool.providers.endpoint import ProviderEndpoint
from tests.support.canned import CannedProvider, serve

HELLO = parse_request({"prompt": "Why is the api slow?"})


def _serve(canned: list[CannedProvider], body: dict[str, Any]) -> str:
    return serve(canned, body).url


def test_gemini_thinking_and_tool_prompt_and_cached_input_are_counted(
    canned: list[CannedProvider],
) -> None:
    # Given: Gemini 2.5 answering with 11 prompt tokens (4 of them cached), 3 tokens of tool
    # results fed back, 7 answer tokens and 1,000 thinking tokens
    url = _serve(
        canned,
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
            ],
            "usageMetadata": {
                "promptTokenCount": 11,
                "cachedContentTokenCount": 4,
                "toolUsePromptTokenCount": 3,
                "candidatesTokenCount": 7,
                "thoughtsTokenCount": 1000,
                "totalTokenCount": 1021,
            },
        },
    )
    adapter = gemini.GeminiProvider(ProviderEndpoint("gemini", url, timeout_s=5))
    # When
    completion = adapter.complete(HELLO, "gemini-2.5-flash")
    adapter.close()
    # Then: every token of totalTokenCount is billed, thinking as output
    assert (completion.input_tokens, completion.output_tokens) == (14, 1007)
    assert completion.input_tokens + completion.output_tokens == 1021
    assert (completion.thinking_tokens, completion.cache_read_tokens) == (1000, 4)
    # 10 input at $0.001/1K, 4 cached at $0.00025/1K, 1,007 output at $0.001/1K
    assert completion_cost("gemini", completion) == Decimal("0.000010") + Decimal(
        "0.000001"
    ) + Decimal("0.001007")


def test_gemini_answer_of_thinking_only_is_empty_and_carries_its_thinking_as_billed(
    canned: list[CannedProvider],
) -> None:
    # Given: thinking used every output token; Google leaves candidatesTokenCount out
    url = _serve(
        canned,
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": ""}]},
                    "finishReason": "MAX_TOKENS",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 11,
                "thoughtsTokenCount": 1000,
                "totalTokenCount": 1011,
            },
        },
    )
    adapter = gemini.GeminiProvider(ProviderEndpoint("gemini", url, timeout_s=5))
    # When
    with pytest.raises(EmptyAnswer) as raised:
        adapter.complete(HELLO, "gemini-2.5-flash")
    adapter.close()
    # Then: nothing to answer with, and every billed token of it is carried to be booked
    billed = raised.value.billed
    assert billed is not None
    assert (billed.input_tokens, billed.output_tokens, billed.thinking_tokens) == (11, 1000, 1000)
    assert "thinking used 1000" in str(raised.value)


def test_claude_cache_writes_reads_and_thinking_are_counted(canned: list[CannedProvider]) -> None:
    # Given: 1,000 uncached input tokens, 2,000 written to and 7,000 read from the cache, 500
    # output tokens of which 300 thinking
    url = _serve(
        canned,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 1000,
                "cache_creation_input_tokens": 2000,
                "cache_read_input_tokens": 7000,
                "output_tokens": 500,
                "output_tokens_details": {"thinking_tokens": 300},
            },
        },
    )
    adapter = claude.ClaudeProvider(ProviderEndpoint("claude", url, timeout_s=5))
    # When
    completion = adapter.complete(HELLO, "claude-sonnet-5")
    adapter.close()
    # Then: the prompt is all three; each part at its own price
    assert (completion.input_tokens, completion.output_tokens) == (10_000, 500)
    assert (completion.cache_write_tokens, completion.cache_read_tokens) == (2000, 7000)
    assert completion.thinking_tokens == 300
    assert completion_cost("claude", completion) == Decimal("0.0376")


def test_nemotron_reasoning_and_cached_input_are_counted(canned: list[CannedProvider]) -> None:
    # Given: OpenAI's usage format with details
    url = _serve(
        canned,
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "nvidia/llama-3.3-nemotron-super-49b-v1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 1486,
                "completion_tokens": 651,
                "total_tokens": 2137,
                "prompt_tokens_details": {"cached_tokens": 1408},
                "completion_tokens_details": {"reasoning_tokens": 512},
            },
        },
    )
    adapter = nemotron.NemotronProvider(ProviderEndpoint("nemotron", url + "/v1", timeout_s=5))
    # When
    completion = adapter.complete(HELLO, "nvidia/llama-3.3-nemotron-super-49b-v1")
    adapter.close()
    # Then: the totals already include both; the details say how many
    assert (completion.input_tokens, completion.output_tokens) == (1486, 651)
    assert (completion.cache_read_tokens, completion.thinking_tokens) == (1408, 512)


def test_ollama_counts_what_it_evaluated(canned: list[CannedProvider]) -> None:
    url = _serve(
        canned,
        {
            "model": "qwen3:8b",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "ok", "thinking": "hmm " * 50},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 26,
            "eval_count": 290,
        },
    )
    adapter = ollama.OllamaProvider(ProviderEndpoint("ollama", url, timeout_s=5))
    completion = adapter.complete(HELLO, "qwen3:8b")
    adapter.close()
    # eval_count includes the thinking: all of it is counted (a local model costs nothing)
    assert (completion.input_tokens, completion.output_tokens) == (26, 290)
    assert completion.text == "ok"
