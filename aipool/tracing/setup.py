"""Tracing switched on in one process: the SDK's provider, its exporters, the filter in front of
them, and the maintained instrumentations (the ``tracing`` extra).

Each process that traces calls :func:`configure` once: a worker's pool processes at
``worker_process_init`` (a provider's export thread does not survive a fork), a producer at its
first ``submit()``. Spans are batched and sent by a thread, off the hop's path; a worker's
process flushes its batch at ``worker_process_shutdown``, a producer at exit.

What the pool adds to the maintained instrumentations (Celery's, redis-py's, httpx's, and the
Anthropic SDK's own spans): the spans of :mod:`aipool.tracing`'s table, the queue waits between
hops (a header stamped at each send, :func:`_stamp_sent`), the filter that keeps text out of every
exporter (:class:`TextFree`), and the trace id in results and ledger rows.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from aipool import tracing
from aipool.errors import SettingsError
from aipool.settings import settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("aipool.tracing")

#: The header each send stamps with its time (ns since the epoch): the queue wait's start.
SENT_HEADER = "aipool_sent_ns"
#: Span attributes that carry text of a request or an answer, whoever sets them (the GenAI
#: semantic conventions' content attributes): dropped by :class:`TextFree`.
TEXT_ATTRIBUTES = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
#: Of an event's attributes, the only ones kept: an exception's message and stack trace may quote
#: a provider's error, which may quote the prompt.
EVENT_ATTRIBUTES = ("exception.type", "exception.escaped")
_lock = threading.Lock()
_provider: Any = None


def wanted() -> bool:
    """Whether the settings ask for traces (``AIPOOL_OTLP_ENDPOINT`` or ``AIPOOL_TRACE_FILE``)."""
    current = settings()
    return current.otlp_endpoint is not None or current.trace_file is not None


def check_installed() -> None:
    """Raise :class:`~aipool.errors.SettingsError` when tracing is asked for and the ``tracing``
    extra is missing (a worker checks it before it starts)."""
    if not wanted():
        return
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.instrumentation.celery
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise SettingsError(
            [
                "AIPOOL_OTLP_ENDPOINT or AIPOOL_TRACE_FILE is set, but the tracing extra is not "
                "installed: pip install 'aipool[tracing]'"
            ]
        ) from None


def configure(process: str, *, redis_client: Any = None) -> bool:
    """Trace this process as the settings say; whether it traces. Once per process.

    ``process`` names it in the spans' resource (``service.name`` ``aipool-<process>``);
    ``redis_client``: the pool's own Redis client, whose commands become spans (the broker's
    polling and the result backend's, outside any request, do not). Raises
    :class:`~aipool.errors.SettingsError` when tracing is asked for and the ``tracing`` extra is
    not installed.
    """
    global _provider
    if not wanted():
        return False
    with _lock:
        if _provider is not None:
            return True
        check_installed()
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create({"service.name": f"aipool-{process}"}))
        for exporter in _exporters():
            provider.add_span_processor(
                BatchSpanProcessor(cast("SpanExporter", TextFree(exporter)))
            )
        trace.set_tracer_provider(provider)
        _provider = provider
        _instrument(redis_client)
        tracing._enable()
    return True


def flush() -> None:
    """Send every span this process still holds (a worker's process about to end)."""
    if _provider is not None:
        _provider.force_flush()


def _exporters() -> list[Any]:
    current = settings()
    exporters: list[Any] = []
    if current.otlp_endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporters.append(OTLPSpanExporter(endpoint=f"{current.otlp_endpoint}/v1/traces"))
    if current.trace_file is not None:
        exporters.append(_file_exporter(current.trace_file))
    return exporters


def _file_exporter(path: Path) -> Any:
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    path.parent.mkdir(parents=True, exist_ok=True)
    # One line per span, appended: every process of the pool may write to the same file.
    out = path.open("a", encoding="utf-8", buffering=1)
    return ConsoleSpanExporter(out=out, formatter=lambda span: span.to_json(indent=None) + "\n")


def _instrument(redis_client: Any) -> None:
    from celery.signals import before_task_publish, task_postrun, task_prerun
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    # The result span reads the run span, so it goes before Celery's instrumentation ends it;
    # the queue wait reads the run span's parent, so it goes after the instrumentation made it.
    task_postrun.connect(_result_span, weak=False)
    before_task_publish.connect(_stamp_sent, weak=False)
    CeleryInstrumentor().instrument()  # type: ignore[no-untyped-call]
    task_prerun.connect(_queue_wait_span, weak=False)
    HTTPXClientInstrumentor().instrument()
    if redis_client is not None:
        RedisInstrumentor.instrument_client(redis_client)


def _stamp_sent(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None:
        headers[SENT_HEADER] = str(time.time_ns())


def _queue_wait_span(task: Any = None, **_: Any) -> None:
    from opentelemetry import trace

    sent = getattr(getattr(task, "request", None), SENT_HEADER, None)
    run = trace.get_current_span()
    parent = getattr(run, "parent", None)
    if sent is None or parent is None:
        return
    try:
        start = int(sent)
    except (TypeError, ValueError):
        return
    queue = (getattr(task.request, "delivery_info", None) or {}).get("routing_key")
    context = trace.set_span_in_context(trace.NonRecordingSpan(parent))
    waited = tracing.TRACER.start_span(
        "aipool.queue_wait",
        context=context,
        start_time=min(start, time.time_ns()),
        attributes=tracing.attributes_of({"aipool.queue": queue}),
    )
    waited.end()


def _result_span(retval: Any = None, **_: Any) -> None:
    if not isinstance(retval, dict) or "status" not in retval:
        return  # a hop that forwarded the request answers nothing
    error = retval.get("error") or {}
    with tracing.span(
        "aipool.result",
        {
            "aipool.status": retval.get("status"),
            "aipool.provider": retval.get("provider"),
            "aipool.model": retval.get("model"),
            "aipool.cost_usd": retval.get("cost_usd"),
            "aipool.cached": bool(retval.get("cached")),
            "aipool.saved_usd": retval.get("saved_usd"),
            "aipool.latency_ms": retval.get("latency_ms"),
            "aipool.error_code": error.get("code") if isinstance(error, dict) else None,
        },
    ):
        pass


class TextFree:
    """An exporter that hands ``inner`` each span without text: no content attribute
    (:data:`TEXT_ATTRIBUTES`), events with only :data:`EVENT_ATTRIBUTES`, no status description.

    The pool's own spans carry none; this holds for every instrumentation's too, whatever an SDK
    is configured to record (``ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def export(self, spans: Sequence[Any]) -> Any:
        return self.inner.export([without_text(span) for span in spans])

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))


def without_text(span: Any) -> Any:
    """``span`` (an SDK ``ReadableSpan``) as :class:`TextFree` exports it."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Status

    attributes = {
        key: value
        for key, value in (span.attributes or {}).items()
        if not key.startswith(TEXT_ATTRIBUTES)
    }
    events = [
        Event(
            event.name,
            {k: v for k, v in (event.attributes or {}).items() if k in EVENT_ATTRIBUTES},
            event.timestamp,
        )
        for event in span.events
    ]
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=Status(span.status.status_code),
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
