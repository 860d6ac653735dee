"""The pool's Celery app plus bare tasks: the baselines ``bench/run`` measures the pool against.

``celery -A bench.bare_app worker`` serves exactly like ``workers.app`` (same settings: late acks,
task events, the edge consumer), plus three tasks that do what a hop of the pool does with none
of the pool's own work (no routing, breaker, quota, ledger or contract):

- ``bench.noop``: returns at once (the floor of one Celery round trip);
- ``bench.hop``: replaces itself onto each queue of ``queues`` in turn, the way ``ai.generate``
  moves from ``router`` to a provider's queue, and on a provider's queue calls that provider
  directly through its SDK (errors are ignored: a failed call moves on, as a failover does);
- ``bench.modules``: which provider SDKs the serving process has imported.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

from celery import Task

from workers.app import app

__all__ = ["app"]

#: The module each provider's SDK lives in.
SDK_MODULES = {
    "ollama": "ollama",
    "gemini": "google.genai",
    "claude": "anthropic",
    "nemotron": "openai",
}
_PROMPT = "What is a pod?"


@app.task(name="bench.noop")
def noop() -> dict[str, str]:
    """Nothing: a bare Celery round trip."""
    return {"status": "ok"}


@app.task(name="bench.hop", bind=True)
def hop(self: Task, queues: list[str] | None = None, call: bool = True) -> Any:
    """Call this queue's provider (when ``call``), then replace onto the next queue, if any."""
    here = (self.request.delivery_info or {}).get("routing_key", "")
    if call and here in SDK_MODULES:
        _call(here)
    if queues:
        following, rest = queues[0], queues[1:]
        return self.replace(
            self.signature(
                kwargs={"queues": rest, "call": call}, queue=following, routing_key=following
            )
        )
    return {"status": "ok", "provider": here}


@app.task(name="bench.modules")
def modules() -> dict[str, bool]:
    """Which provider SDKs this process has imported."""
    return {provider: module in sys.modules for provider, module in SDK_MODULES.items()}


def _call(provider: str) -> None:
    try:
        _CALLS[provider]()
    except Exception:  # a faulted provider: the bare hop moves on, as the pool's would
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
