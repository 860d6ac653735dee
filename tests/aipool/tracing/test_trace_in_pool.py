"""One trace per request across the producer and every hop, with real workers and a real OTLP
exporter sending to a loopback receiver (issue #45)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from aipool.ledger.db import make_engine
from aipool.ledger.models import UsageLogRow
from aipool.ledger.usage_log import drain
from tests.support.otlp import ReceivedSpan, Receiver
from tests.support.private_pool import PrivatePool, importing_producer, private_pool

pytestmark = pytest.mark.integration
PROMPT = "What is a pod? Tell me about kubelet-7341 please."
#: Spans are batched: each process sends its batch this often (ms).
BATCH_DELAY = {"OTEL_BSP_SCHEDULE_DELAY": "100"}
PRODUCER = """
import json, sys
from tasks.client import submit
answer = submit({"prompt": sys.argv[1], "user_id": "u-9"}).get(timeout=60)
print(json.dumps(answer))
"""


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    with Receiver() as started:
        yield started


@pytest.fixture()
def traced_pool(simulator, ledger_url, receiver) -> Iterator[PrivatePool]:  # type: ignore[no-untyped-def]
    with private_pool(13, AIPOOL_OTLP_ENDPOINT=receiver.endpoint, **BATCH_DELAY) as pool:
        yield pool


def _submit(pool: PrivatePool, receiver: Receiver, prompt: str) -> dict:  # type: ignore[type-arg]
    answer: dict = importing_producer(  # type: ignore[type-arg]
        pool, PRODUCER, prompt, AIPOOL_OTLP_ENDPOINT=receiver.endpoint, **BATCH_DELAY
    )
    return answer


def _trace(receiver: Receiver, trace_id: str) -> list[ReceivedSpan]:
    """The trace's spans once its result span has arrived and nothing more comes for a while."""
    give_up = time.monotonic() + 30
    seen, steady_since = -1, time.monotonic()
    while time.monotonic() < give_up:
        spans = [s for s in receiver.spans() if s.trace_id == trace_id]
        if len(spans) != seen:
            seen, steady_since = len(spans), time.monotonic()
        elif any(s.name == "aipool.result" for s in spans) and time.monotonic() - steady_since > 1:
            return spans
        time.sleep(0.1)
    raise AssertionError(f"the trace did not arrive whole: {sorted(s.name for s in spans)}")


def test_a_request_that_fails_over_is_one_trace_over_every_hop_and_queue_wait(
    traced_pool, receiver, healthy, ledger_url
) -> None:  # type: ignore[no-untyped-def]
    # Given Ollama down, so a request routed to it fails over to Gemini
    healthy.set_fault("ollama", "down")
    # When a producer that traces submits it
    answer = _submit(traced_pool, receiver, PROMPT)
    assert answer["status"] == "ok" and answer["provider"] == "gemini"
    assert [a["outcome"] for a in answer["attempts"]] == ["error", "ok"]
    # Then the result names its trace, and that one trace holds the whole journey
    trace_id = answer["trace_id"]
    assert trace_id and len(trace_id) == 32
    spans = _trace(receiver, trace_id)
    names = [s.name for s in spans]
    by_name = {name: [s for s in spans if s.name == name] for name in set(names)}
    # the producer's send and the routing decision
    (submitted,) = by_name["aipool.submit"]
    assert submitted.service == "aipool-producer" and submitted.parent_id == ""
    (decided,) = by_name["aipool.route"]
    assert decided.attributes["aipool.provider"] == "ollama"
    assert decided.attributes["aipool.intent"] and decided.attributes["aipool.tier"]
    # two sends (the producer's and the re-dispatch to Gemini), each followed by its queue wait
    assert len(by_name["apply_async/ai.generate"]) == 2
    waits = sorted(by_name["aipool.queue_wait"], key=lambda s: s.start_ns)
    assert [w.attributes["aipool.queue"] for w in waits] == ["ollama", "gemini"]
    assert all(w.end_ns >= w.start_ns for w in waits)
    # each hop run by a worker, with its admission, call and settle
    assert len(by_name["run/ai.generate"]) == 2
    assert {s.service for s in by_name["run/ai.generate"]} == {"aipool-worker"}
    calls = {s.attributes["aipool.provider"] for s in by_name["aipool.call"]}
    assert calls == {"ollama", "gemini"}
    assert len(by_name["aipool.admission"]) >= 2 and len(by_name["aipool.settle"]) == 2
    attempts = {s.attributes["aipool.provider"]: s.attributes for s in by_name["aipool.attempt"]}
    assert attempts["ollama"]["aipool.outcome"] == "error"
    assert attempts["ollama"]["aipool.error_code"] == "unreachable"
    assert attempts["gemini"]["aipool.outcome"] == "ok"
    assert attempts["gemini"]["aipool.tokens.output"] == answer["usage"]["output_tokens"]
    (result,) = by_name["aipool.result"]
    assert result.attributes["aipool.status"] == "ok"
    # the maintained instrumentations' spans are in the same trace (the pool's Redis, httpx)
    assert "EVALSHA" in names
    # every span but the root hangs off another span of the same trace
    ids = {s.span_id for s in spans}
    assert all(s.parent_id in ids for s in spans if s is not submitted)
    # And the ledger rows of both hops carry the trace id
    engine = make_engine(ledger_url)
    try:
        while drain(traced_pool.client, engine).written:
            pass
        with engine.connect() as conn:
            rows = conn.execute(
                select(UsageLogRow.provider, UsageLogRow.trace_id).where(
                    UsageLogRow.request_id == answer["request_id"]
                )
            ).all()
    finally:
        engine.dispose()
    assert sorted(rows) == [("gemini", trace_id), ("ollama", trace_id)]
    # And no span anywhere holds any text of the prompt or of the answer
    for span in receiver.spans():
        _holds_no_text(span, [PROMPT, answer["content"]])


def _holds_no_text(span: ReceivedSpan, texts: list[str]) -> None:
    values = [*span.attributes.values(), span.status_message, span.name]
    values += [v for _, attributes in span.events for v in attributes.values()]
    words = {w for text in texts for w in text.split() if len(w) >= 6}
    for value in values:
        shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        for text in texts:
            assert text not in shown, (span.name, shown)
        for word in words:
            assert word not in shown, (span.name, word, shown)
