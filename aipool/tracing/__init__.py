"""One trace per request, across every process it crosses (OpenTelemetry; off by default).

A request crosses the producer, the router, one to four provider hops and the result backend, each
in another process. With ``AIPOOL_OTLP_ENDPOINT`` (OTLP over HTTP) or ``AIPOOL_TRACE_FILE`` (JSON
lines, the SDK's console exporter) set, each of them adds its spans to one trace, whose id is in
the result (``trace_id``) and in every ledger row of the request:

=======================  ==========================================  ==========================
span                     what it covers                              made by
=======================  ==========================================  ==========================
``aipool.submit``        the producer's ``submit()``: route and send  the pool (tasks.client)
``aipool.route``         the routing decision and the cache look-up   the pool (aipool.cache)
``apply_async/…``        each send: the first, every re-dispatch      Celery's instrumentation
``aipool.queue_wait``    from a send to the worker taking it          the pool (a header stamp)
``run/ai.generate``      one hop in one worker                        Celery's instrumentation
``aipool.admission``     breaker, quota and lease (attempt script)    the pool (the hop runner)
``aipool.call``          the provider call                            the pool; beneath it the
                                                                      SDK's own (Anthropic) or
                                                                      httpx's (Ollama)
``aipool.settle``        recording the outcome (attempt script)       the pool
``aipool.attempt``       each hop's outcome, tokens, cost             the pool (an observer)
``aipool.result``        the answer the producer gets                 the pool (task_postrun)
``EVALSHA``, ``GET``…    each command on the pool's Redis             redis-py's instrumentation
=======================  ==========================================  ==========================

The trace context rides in each message's headers (Celery's instrumentation injects it at every
send, ``Task.replace`` included), so every re-dispatch stays in the trace. Attributes are the
contract's vocabulary only (provider, model, outcome, tokens, cost, service, intent, tier, rule):
never prompt or answer text. A filter in front of every exporter (:mod:`aipool.tracing.setup`)
also drops what other instrumentations could carry: message content, exception messages and
stack traces, status descriptions.

This module needs only ``opentelemetry-api`` (which the runtime installs anyway): with tracing
off it costs a flag test. The SDK and the instrumentations are the ``tracing`` extra.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.util.types import AttributeValue

#: The pool's tracer: whichever provider :func:`aipool.tracing.setup.configure` installs.
TRACER = trace.get_tracer("aipool")
_enabled = False


def enabled() -> bool:
    """Whether this process traces (:func:`aipool.tracing.setup.configure` ran)."""
    return _enabled


def _enable() -> None:
    global _enabled
    _enabled = True


def current_trace_id() -> str | None:
    """The id of the trace this code runs in (32 hex digits), or None when it runs in none."""
    if not _enabled:
        return None
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """A span named ``name`` around the block, when this process traces; else nothing at all.

    ``attributes`` must be the vocabulary's words and numbers (:func:`attributes`)."""
    if not _enabled:
        yield None
        return
    with TRACER.start_as_current_span(name, attributes=attributes_of(attributes or {})) as made:
        yield made


def note(key: str, value: Any) -> None:
    """Set attribute ``key`` on the span this code runs in, when this process traces."""
    if _enabled and value is not None:
        trace.get_current_span().set_attributes(attributes_of({key: value}))


def attributes_of(values: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """``values`` as span attributes: None dropped, decimals as floats, the rest as given."""
    shown: dict[str, AttributeValue] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            shown[key] = value
        else:
            shown[key] = float(value)
    return shown
