"""The hop runner's spans: admission, the provider call and the settle around the attempt
script's steps, and one span per attempt as the observers see it.

Wrapped from outside (:func:`trace_hops`), so the runner and the attempt's lifecycle carry no
tracing code and a pool that does not trace runs them unwrapped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from aipool import tracing
from aipool.attempt.event import AttemptEvent
from aipool.attempt.runner import HopRunner
from aipool.providers.base import Provider

#: The attempt script's steps and the span each is: ``route`` admits a new request's first hop
#: (breakers, quotas, money rules of its chain), ``begin`` a hop's call, ``finish`` settles it.
BOOK_SPANS = {"route": "aipool.admission", "begin": "aipool.admission", "finish": "aipool.settle"}


def trace_hops(runner: HopRunner) -> None:
    """Give ``runner``'s attempt book and providers their spans, and observe every attempt."""
    book = runner.book
    for method, name in BOOK_SPANS.items():
        setattr(book, method, _spanned(name, method, getattr(book, method)))
    runner.providers = _traced_providers(runner.providers)
    runner.observers.append(observe_attempt)


def _spanned(name: str, step: str, call: Callable[..., Any]) -> Callable[..., Any]:
    def spanned(*args: Any, **kwargs: Any) -> Any:
        with tracing.span(name, {"aipool.step": step}):
            return call(*args, **kwargs)

    return spanned


class _TracedProvider:
    """A provider whose every call is an ``aipool.call`` span (provider, model, tokens)."""

    def __init__(self, name: str, inner: Provider) -> None:
        self.name = name
        self.inner = inner

    def complete(self, request: Any, model: str, **options: Any) -> Any:
        with tracing.span(
            "aipool.call", {"aipool.provider": self.name, "aipool.model": model}
        ) as made:
            completion = self.inner.complete(request, model, **options)
            if made is not None:
                made.set_attributes(
                    tracing.attributes_of(
                        {
                            "aipool.tokens.input": completion.input_tokens,
                            "aipool.tokens.output": completion.output_tokens,
                        }
                    )
                )
            return completion

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.inner, attribute)


def _traced_providers(providers: Callable[[str], Provider]) -> Callable[[str], Provider]:
    made: dict[str, Any] = {}

    def traced(name: str) -> Provider:
        inner = providers(name)
        wrapper = made.get(name)
        if wrapper is None or wrapper.inner is not inner:
            wrapper = made[name] = _TracedProvider(name, inner)
        traced_provider: Provider = wrapper
        return traced_provider

    return traced


def observe_attempt(event: AttemptEvent) -> None:
    """One ``aipool.attempt`` span per hop's outcome (an observer): a call's span covers the
    call, a skip's is an instant. Words of the vocabulary and numbers only; a failed call's
    ``code``, never its message."""
    if not tracing.enabled():
        return
    route = event.route
    latency_ns = int(event.attempt.latency_ms * 1_000_000)
    end = time.time_ns()
    attempt = tracing.TRACER.start_span(
        "aipool.attempt",
        start_time=end - latency_ns,
        attributes=tracing.attributes_of(
            {
                "aipool.provider": event.hop.provider,
                "aipool.model": event.completion.model if event.completion else event.hop.model,
                "aipool.outcome": event.attempt.outcome,
                "aipool.error_code": event.attempt.code,
                "aipool.position": event.position,
                "aipool.tokens.input": event.input_tokens,
                "aipool.tokens.output": event.output_tokens,
                "aipool.cost_usd": event.cost_usd,
                "aipool.saved_usd": event.saved_usd or None,
                "aipool.estimated": event.estimated,
                "aipool.replayed": event.replayed,
                "aipool.service": route.service,
                "aipool.intent": route.intent,
                "aipool.tier": route.tier,
                "aipool.rule": route.rule,
            }
        ),
    )
    attempt.end(end)
