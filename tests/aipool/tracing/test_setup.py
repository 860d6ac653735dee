"""What leaves a process that traces: no text of a request or an answer, whatever an
instrumentation put on its spans."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from aipool.tracing.setup import TextFree


def test_content_attributes_exception_messages_and_status_text_never_reach_an_exporter() -> None:
    # Given an SDK's span that recorded the conversation and a provider error quoting the prompt
    sink = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(TextFree(sink)))  # type: ignore[arg-type]
    tracer = provider.get_tracer("an-sdk")
    try:
        with tracer.start_as_current_span("chat") as span:
            span.set_attribute("gen_ai.input.messages", '[{"content": "What is a pod?"}]')
            span.set_attribute("gen_ai.output.messages", "A pod is ...")
            span.set_attribute("gen_ai.request.model", "claude-sonnet-4-5")
            raise ValueError("400: cannot answer 'What is a pod?'")
    except ValueError:
        pass
    # When it is exported
    (exported,) = sink.get_finished_spans()
    # Then the model is there, the texts are not: no content, no exception message or stack
    assert dict(exported.attributes or {}) == {"gen_ai.request.model": "claude-sonnet-4-5"}
    (event,) = exported.events
    assert event.name == "exception"
    assert dict(event.attributes or {}) == {
        "exception.type": "ValueError",
        "exception.escaped": "False",
    }
    assert not exported.status.description
