"""The simulators bill what their providers bill: thinking, reasoning, cache writes and reads.

Driven by the real SDKs, so the demo and the pool's tests see the same fields as production.
"""

from __future__ import annotations

import anthropic
import openai
from google import genai
from google.genai import types

from aipool.simulator import Simulator
from aipool.simulator.answers import THINKING_BASE, THINKING_PER_OUTPUT_TOKEN
from aipool.simulator.prompt_cache import CACHE_STEP, IMPLICIT_MINIMUM

LONG = "The payment service runbook says to check the pods first. " * 200  # > 1,024 tokens


def _gemini(sim: Simulator) -> genai.Client:
    return genai.Client(
        api_key="sim", http_options=types.HttpOptions(base_url=sim.base_urls["gemini"])
    )


def test_gemini_25_flash_thinks_unless_its_budget_is_zero_and_flash_lite_does_not(
    sim: Simulator,
) -> None:
    client = _gemini(sim)
    # When: the same question to Flash, Flash with thinking off, and Flash-Lite
    thinking = client.models.generate_content(model="gemini-2.5-flash", contents="Why 502?")
    off = client.models.generate_content(
        model="gemini-2.5-flash",
        contents="Why 502?",
        config=types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=0)),
    )
    lite = client.models.generate_content(model="gemini-2.5-flash-lite", contents="Why 502?")
    # Then: only the first thought, counted outside the candidates and inside the total
    usage = thinking.usage_metadata
    assert usage is not None and usage.candidates_token_count is not None
    assert usage.thoughts_token_count == (
        THINKING_BASE + THINKING_PER_OUTPUT_TOKEN * usage.candidates_token_count
    )
    assert off.usage_metadata is not None and not off.usage_metadata.thoughts_token_count
    assert lite.usage_metadata is not None and not lite.usage_metadata.thoughts_token_count


def test_a_repeated_long_prompt_is_read_from_gemini_and_openai_caches(sim: Simulator) -> None:
    gemini = _gemini(sim)
    nvidia = openai.OpenAI(api_key="sim", base_url=sim.base_urls["openai"], max_retries=0)
    contents = [LONG, "And what next?"]
    messages = [{"role": "system", "content": LONG}, {"role": "user", "content": "Next?"}]
    # When: each is asked the same long prompt twice
    first = gemini.models.generate_content(model="gemini-2.5-flash", contents=contents)
    second = gemini.models.generate_content(model="gemini-2.5-flash", contents=contents)
    cold = nvidia.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    warm = nvidia.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    # Then: the second reads the prefix from the cache, as part of the prompt
    assert first.usage_metadata is not None and second.usage_metadata is not None
    assert not first.usage_metadata.cached_content_token_count
    cached = second.usage_metadata.cached_content_token_count or 0
    assert IMPLICIT_MINIMUM <= cached < (second.usage_metadata.prompt_token_count or 0)
    assert cold.usage is not None and warm.usage is not None
    assert cold.usage.prompt_tokens_details is not None
    assert cold.usage.prompt_tokens_details.cached_tokens == 0
    assert warm.usage.prompt_tokens_details is not None
    hit = warm.usage.prompt_tokens_details.cached_tokens or 0
    assert hit >= IMPLICIT_MINIMUM and hit % CACHE_STEP == 0 and hit < warm.usage.prompt_tokens


def test_nemotron_reasons_when_its_system_prompt_says_detailed_thinking_on(sim: Simulator) -> None:
    nvidia = openai.OpenAI(api_key="sim", base_url=sim.base_urls["openai"], max_retries=0)
    answer = nvidia.chat.completions.create(
        model="nvidia/llama-3.3-nemotron-super-49b-v1",
        messages=[
            {"role": "system", "content": "detailed thinking on"},
            {"role": "user", "content": "Plan the rollback"},
        ],
    )
    assert answer.usage is not None and answer.usage.completion_tokens_details is not None
    reasoning = answer.usage.completion_tokens_details.reasoning_tokens or 0
    assert reasoning > 0 and answer.usage.completion_tokens > reasoning


def test_claude_writes_a_marked_prefix_once_then_reads_it(sim: Simulator) -> None:
    client = anthropic.Anthropic(api_key="sim", base_url=sim.base_urls["anthropic"], max_retries=0)
    system: list[dict[str, object]] = [
        {"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}
    ]

    def ask() -> anthropic.types.Message:
        return client.messages.create(
            model="claude-sonnet-5",
            max_tokens=256,
            system=system,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "Summarise"}],
        )

    # When: the same marked system prompt twice
    first, second = ask(), ask()
    # Then: written by the first call, read by the second, reported apart from input_tokens
    assert first.usage.cache_creation_input_tokens and not first.usage.cache_read_input_tokens
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert not second.usage.cache_creation_input_tokens
    assert first.usage.input_tokens == second.usage.input_tokens
