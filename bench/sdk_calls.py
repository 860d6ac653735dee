"""One call to each simulated provider through its own SDK, as the pool's adapters make it.

Shared by both baselines (``bench.bare_app`` and ``bench.plain_app``), so the pool and its
baselines pay the same SDK call. Imports nothing of ``aipool`` or ``workers``: the plain Celery
baseline must not. Clients are built once per process and reused, as the pool's are.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

#: The module each provider's SDK lives in.
SDK_MODULES = {
    "ollama": "ollama",
    "gemini": "google.genai",
    "claude": "anthropic",
    "nemotron": "openai",
}
_PROMPT = "What is a pod?"


def call(provider: str) -> None:
    """One call to ``provider``; a faulted provider's error is ignored (a baseline hop moves on,
    as the pool's would)."""
    try:
        _CALLS[provider]()
    except Exception:
        return


@cache
def _ollama() -> Any:
    import ollama

    return ollama.Client(host=os.environ["OLLAMA_BASE_URL"], timeout=30)


@cache
def _gemini() -> Any:
    from google import genai
    from google.genai import types

    return genai.Client(
        api_key=os.environ.get("GEMINI_API_KEY", "bench-key"),
        http_options=types.HttpOptions(
            base_url=os.environ["GEMINI_BASE_URL"], api_version="v1beta", timeout=30_000
        ),
    )


@cache
def _claude() -> Any:
    import anthropic

    return anthropic.Anthropic(
        base_url=os.environ["ANTHROPIC_BASE_URL"],
        api_key=os.environ.get("ANTHROPIC_API_KEY", "bench-key"),
        max_retries=0,
    )


@cache
def _nemotron() -> Any:
    import openai

    return openai.OpenAI(
        base_url=os.environ["NVIDIA_BASE_URL"],
        api_key=os.environ.get("NVIDIA_API_KEY", "bench-key"),
        max_retries=0,
    )


def call_ollama() -> None:
    """One chat call to Ollama, as the pool's adapter makes it (no stream)."""
    _ollama().chat(
        model="llama3.2:3b",
        messages=[{"role": "user", "content": _PROMPT}],
        options={"num_predict": 1024},
        stream=False,
    )


def _call_gemini() -> None:
    _gemini().models.generate_content(model="gemini-2.5-flash", contents=_PROMPT)


def _call_claude() -> None:
    _claude().messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[{"role": "user", "content": _PROMPT}],
    )


def _call_nemotron() -> None:
    _nemotron().chat.completions.create(
        model="nvidia/llama-3.3-nemotron-super-49b-v1",
        messages=[{"role": "user", "content": _PROMPT}],
    )


_CALLS = {
    "ollama": call_ollama,
    "gemini": _call_gemini,
    "claude": _call_claude,
    "nemotron": _call_nemotron,
}
