"""The response cache with real workers: identical questions cost one call, hits are booked at
$0 with what they saved, and what must never be replayed never is (issue #45)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from aipool.ledger.db import make_engine
from aipool.ledger.models import UsageLogRow
from aipool.ledger.usage_log import drain
from tests.support.cache import SECRET, cached_routes
from tests.support.private_pool import PrivatePool, importing_producer, private_pool, send

pytestmark = pytest.mark.integration
TIMEOUT = 90
QUESTION = {"prompt": "What is a pod?", "service": "faq", "user_id": "u-7"}


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cached_routes(Path(tmp_path_factory.mktemp("routes")))


@pytest.fixture(scope="module")
def cached_pool(simulator, ledger_url: str, routes: Path) -> Iterator[PrivatePool]:  # type: ignore[no-untyped-def]
    with private_pool(
        12, AIPOOL_ROUTES_FILE=str(routes), AIPOOL_CACHE_SECRET=SECRET, concurrency=2
    ) as pool:
        yield pool


@pytest.fixture()
def ledger(ledger_url: str) -> Iterator[Engine]:
    engine = make_engine(ledger_url)
    yield engine
    engine.dispose()


def _rows(pool: PrivatePool, engine: Engine, request_ids: list[str]) -> list[UsageLogRow]:
    while drain(pool.client, engine).written:
        pass
    with engine.connect() as conn:
        found = conn.execute(select(UsageLogRow).where(UsageLogRow.request_id.in_(request_ids)))
        return list(found.all())  # type: ignore[arg-type]


def test_a_hundred_identical_questions_at_once_make_one_call_and_ninety_nine_hits(
    cached_pool, healthy, ledger
) -> None:  # type: ignore[no-untyped-def]
    # Given the cache on for QUERY and the faq service, and nothing kept
    cached_pool.client.flushdb()
    # When 100 identical questions are sent at once
    pending = [send(cached_pool, QUESTION) for _ in range(100)]
    answers = [p.get(timeout=TIMEOUT) for p in pending]
    # Then Gemini was called once, and every request got its answer
    assert healthy.calls("gemini") == 1
    assert {a["status"] for a in answers} == {"ok"}
    assert len({a["content"] for a in answers}) == 1
    (paid,) = [a for a in answers if not a["cached"]]
    hits = [a for a in answers if a["cached"]]
    assert len(hits) == 99 and paid["cost_usd"] > 0
    # each hit at $0, saying what it saved, with the cache in its attempts trail
    for hit in hits:
        assert hit["cost_usd"] == 0 and hit["saved_usd"] == paid["cost_usd"]
        assert [a["outcome"] for a in hit["attempts"]] == ["cached"]
        assert hit["provider"] == "gemini" and hit["usage"]["input_tokens"] == 0
    # and the ledger holds one call and 99 hits at $0, each with the saving
    rows = _rows(cached_pool, ledger, [a["request_id"] for a in answers])
    assert sorted(r.outcome for r in rows) == ["cached"] * 99 + ["ok"]
    (call,) = [r for r in rows if r.outcome == "ok"]
    assert call.cost_usd == Decimal(str(paid["cost_usd"]))
    cached = [r for r in rows if r.outcome == "cached"]
    assert {(r.cost_usd, r.saved_usd, r.input_tokens) for r in cached} == {
        (Decimal(0), call.cost_usd, 0)
    }
    assert {r.user_id for r in rows} == {"u-7"} and {r.service for r in rows} == {"faq"}


def test_a_question_differing_in_one_character_is_a_miss(cached_pool, healthy) -> None:  # type: ignore[no-untyped-def]
    # Given an answer kept
    first = send(cached_pool, QUESTION).get(timeout=TIMEOUT)
    again = send(cached_pool, QUESTION).get(timeout=TIMEOUT)
    assert again["cached"] and again["content"] == first["content"]
    calls = healthy.calls("gemini")
    # When the question differs in one character
    other = send(cached_pool, {**QUESTION, "prompt": "What is a pod!"}).get(timeout=TIMEOUT)
    # Then it is asked of the provider
    assert not other["cached"] and other["status"] == "ok"
    assert healthy.calls("gemini") == calls + 1


def test_another_service_reads_another_services_entries_only_when_both_share_a_scope(
    cached_pool, healthy
) -> None:  # type: ignore[no-untyped-def]
    question = {"prompt": "What is a namespace?", "service": "faq"}
    send(cached_pool, question).get(timeout=TIMEOUT)
    shared = send(cached_pool, {**question, "service": "help"}).get(timeout=TIMEOUT)
    apart = send(cached_pool, {**question, "service": "billing"}).get(timeout=TIMEOUT)
    assert shared["cached"] and not apart["cached"]


def test_tool_calls_and_alert_triage_are_never_served_from_the_cache(cached_pool, healthy) -> None:  # type: ignore[no-untyped-def]
    tool = {
        "name": "restart_pod",
        "description": "Restart a pod",
        "parameters": {"type": "object", "properties": {"pod": {"type": "string"}}},
    }
    tool_call = {"prompt": "Restart the checkout pod", "tools": [tool], "service": "faq"}
    triage = {"prompt": "Disk 91% full on db-1", "intent": "ALERT_TRIAGE", "service": "faq"}
    for request in (tool_call, triage):
        # When the same request is sent twice
        answers = [send(cached_pool, request).get(timeout=TIMEOUT) for _ in range(2)]
        # Then both were answered by a provider, never by the cache
        assert [a["cached"] for a in answers] == [False, False], request
        for answer in answers:
            assert "cached" not in [a["outcome"] for a in answer["attempts"]]


def test_a_redis_flush_loses_the_hits_only(cached_pool, healthy) -> None:  # type: ignore[no-untyped-def]
    question = {**QUESTION, "prompt": "What is a deployment?"}
    send(cached_pool, question).get(timeout=TIMEOUT)
    assert send(cached_pool, question).get(timeout=TIMEOUT)["cached"]
    calls = healthy.calls("gemini")
    # When Redis loses everything (a restart without persistence)
    cached_pool.client.flushdb()
    # Then the same question is answered all the same, by a provider
    after = send(cached_pool, question).get(timeout=TIMEOUT)
    assert after["status"] == "ok" and not after["cached"]
    assert healthy.calls("gemini") == calls + 1


PRODUCER = """
import json, sys
from tasks.client import submit
request = json.loads(sys.argv[1])
first = submit(request).get(timeout=60)
burst = [submit({**request, "prompt": request["prompt"] + " (burst)"}) for _ in range(5)]
print(json.dumps([first, submit(request).get(timeout=60), *(b.get(timeout=60) for b in burst)]))
"""


def test_submit_answers_a_kept_answer_itself_and_holds_identical_ones_back(
    cached_pool, healthy, routes
) -> None:  # type: ignore[no-untyped-def]
    # Given a producer that imports the pool, with the same route table and secret as its workers
    question = {"prompt": "What is a service mesh?", "service": "faq"}
    # When it asks a question twice, then five identical ones at once
    first, second, *burst = importing_producer(
        cached_pool,
        PRODUCER,
        json.dumps(question),
        AIPOOL_ROUTES_FILE=str(routes),
        AIPOOL_CACHE_SECRET=SECRET,
    )
    # Then the second was answered from the cache, and the five cost one call
    assert not first["cached"] and second["cached"]
    assert second["content"] == first["content"] and second["saved_usd"] == first["cost_usd"]
    assert [b["cached"] for b in burst].count(False) == 1
    assert healthy.calls("gemini") == 2
