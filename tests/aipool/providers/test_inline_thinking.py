"""A reasoning model's thinking sent inline, before its answer, is never handed over as the answer.

DeepSeek-R1 and Qwen3 through Ollama put their thinking in ``message.content`` between ``<think>``
tags when ``think`` is not sent (the pool sends none), and some model and option combinations do
even with ``think: false`` (ollama/ollama-python#529). NVIDIA's Llama-3.3-Nemotron-Super-49B-v1
thinks the same way in ``content`` when its system prompt says ``detailed thinking on``
(``AIPOOL_NEMOTRON_SYSTEM_PREFIX``; its model card). The producer asked for the answer: the
thinking is not it, and may quote the prompt.
"""

from __future__ import annotations

from typing import Any

import pytest

from aipool.errors import EmptyAnswer
from tests.support.canned import NEMOTRON, answer, billed, raised

QWEN = "qwen3:8b"
THOUGHT = "<think>\nThe user asks why the api is slow. Look at the pool first.\n</think>\n\n"


def _ollama(content: str, done_reason: str = "stop") -> dict[str, Any]:
    # POST /api/chat, "stream": false (docs/api.md, "Chat request (No streaming)")
    return {
        "model": QWEN,
        "created_at": "2026-12-07T10:00:00.000Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": done_reason,
        "done": True,
        "total_duration": 4883583458,
        "load_duration": 1334875,
        "prompt_eval_count": 26,
        "prompt_eval_duration": 342546000,
        "eval_count": 282,
        "eval_duration": 4535599000,
    }


def _nemotron(content: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1765101600,
        "model": NEMOTRON,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {"prompt_tokens": 26, "completion_tokens": 282, "total_tokens": 308},
    }


@pytest.mark.parametrize(
    ("provider", "model", "body"),
    [
        ("ollama", QWEN, _ollama(THOUGHT + "The pool is saturated.")),
        ("nemotron", NEMOTRON, _nemotron(THOUGHT + "The pool is saturated.")),
    ],
    ids=["ollama", "nemotron"],
)
def test_the_answer_after_inline_thinking_is_the_answer(
    canned: Any, provider: str, model: str, body: Any
) -> None:
    completion = answer(canned, provider, model, body)
    assert completion.text == "The pool is saturated."
    assert (completion.input_tokens, completion.output_tokens) == (26, 282)


@pytest.mark.parametrize(
    ("provider", "model", "body"),
    [
        ("ollama", QWEN, _ollama("<think>\nThe user asks why the api", done_reason="length")),
        ("nemotron", NEMOTRON, _nemotron("<think>\nThe user asks why the api", finish="length")),
    ],
    ids=["ollama", "nemotron"],
)
def test_thinking_cut_by_the_output_limit_is_an_empty_answer_billed(
    canned: Any, provider: str, model: str, body: Any
) -> None:
    error = raised(canned, provider, model, body)
    assert isinstance(error, EmptyAnswer)
    assert billed(error) == (26, 282)


def test_an_answer_that_only_mentions_the_tag_keeps_it(canned: Any) -> None:
    # Only a block the answer opens with is thinking
    text = "Wrap the reasoning in <think> tags, then answer."
    assert answer(canned, "ollama", QWEN, _ollama(text)).text == text
