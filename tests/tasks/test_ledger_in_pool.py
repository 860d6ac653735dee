"""Every hop a worker makes lands in the PostgreSQL ledger once; quotas come back from it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Engine, select

from aipool.ledger.db import make_engine
from aipool.ledger.models import UsageLogRow
from aipool.ledger.testing import empty_ledger
from aipool.quota import quotas_for
from tasks.client import submit
from tasks.maintenance import drain_ledger, restore_quota_counters
from tests.support.private_pool import private_pool, send
from tests.support.requests import CLOUD_TRIAGE

pytestmark = pytest.mark.integration
TIMEOUT = 30


@pytest.fixture()
def ledger(ledger_url: str, healthy, clean_redis, pool) -> Iterator[Engine]:  # type: ignore[no-untyped-def]
    engine = make_engine(ledger_url)
    empty_ledger(engine)
    yield engine
    engine.dispose()


def _rows(engine: Engine, request_id: str) -> list[UsageLogRow]:
    with engine.connect() as conn:
        result = conn.execute(
            select(UsageLogRow)
            .where(UsageLogRow.request_id == request_id)
            .order_by(UsageLogRow.attempt)
        )
        return list(result.all())  # type: ignore[arg-type]


def test_each_hop_of_a_fallback_is_one_ledger_row(ledger, healthy) -> None:  # type: ignore[no-untyped-def]
    # Given ollama down / When a request falls back to gemini and the spool is drained
    healthy.set_fault("ollama", "down")
    answer = submit({"prompt": "What is a pod?", "user_id": "u-42"}).get(timeout=TIMEOUT)
    drain_ledger()
    drain_ledger()  # a second drain (or a redelivered record) writes nothing more
    rows = _rows(ledger, answer["request_id"])
    # Then both hops are recorded once, with route, tokens and cost, and no prompt text
    assert [(r.provider, r.outcome, r.attempt) for r in rows] == [
        ("ollama", "error", 0),
        ("gemini", "ok", 1),
    ]
    failed, answered = rows
    assert not failed.success and failed.error_message.startswith("unreachable")
    assert answered.success and answered.user_id == "u-42"
    assert answered.input_tokens == answer["usage"]["input_tokens"]
    assert answered.output_tokens == answer["usage"]["output_tokens"]
    assert answered.intent == answer["route"]["intent"]
    assert answered.route_reason == answer["route"]["reason"]
    assert answered.route_chain.startswith("ollama:llama3.2:3b → gemini:")
    assert answered.fallback_position == 1
    assert answered.cost_usd == Decimal(str(answer["cost_usd"])) > 0
    assert all("What is a pod" not in (r.error_message or "") for r in rows)


def test_quota_counters_come_back_from_the_ledger_after_redis_is_flushed(
    ledger, healthy, clean_redis
) -> None:  # type: ignore[no-untyped-def]
    # Given gemini answered three requests and their usage reached the ledger
    healthy.set_fault("ollama", "down")
    answers = [
        submit({"prompt": f"What is a pod? (question {i})"}).get(timeout=TIMEOUT) for i in range(3)
    ]
    assert {a["provider"] for a in answers} == {"gemini"}
    drain_ledger()
    used = sum(a["usage"]["input_tokens"] + a["usage"]["output_tokens"] for a in answers)
    gemini = quotas_for(clean_redis)["gemini"]
    before = gemini.usage()
    # When Redis loses its data
    for key in clean_redis.scan_iter("aipool:quota:*"):
        clean_redis.delete(key)
    assert gemini.usage()["daily_tokens"]["used"] == 0
    restore_quota_counters()
    # Then the day's and month's counters say what the ledger says, and the remaining budget too
    after = gemini.usage()
    assert after["daily_tokens"]["used"] == used == before["daily_tokens"]["used"]
    assert after["daily_requests"]["used"] == 3
    assert after["monthly_tokens"]["used"] == used
    assert after["daily_tokens"]["remaining"] == 100_000 - used


def test_gemini_thinking_tokens_are_charged_and_counted_by_the_quota(
    ledger, healthy, clean_redis
) -> None:  # type: ignore[no-untyped-def]
    # Given Gemini 2.5 Flash (which thinks) first on a cloud-tier route, whose models may think
    # half of max_tokens (a local route falling back to Gemini does not think: docs/routing.md)
    gemini = quotas_for(clean_redis)["gemini"]
    before = gemini.usage()["daily_tokens"]["used"] or 0
    # When a request is answered and its usage drained
    answer = submit({"prompt": CLOUD_TRIAGE}).get(timeout=TIMEOUT)
    drain_ledger()
    # Then the thinking is billed as output: in the result, the ledger, the cost and the quota
    usage = answer["usage"]
    assert answer["provider"] == "gemini" and usage["thinking_tokens"] > 0
    assert usage["output_tokens"] > usage["thinking_tokens"]
    (row,) = _rows(ledger, answer["request_id"])
    billed = usage["input_tokens"] + usage["output_tokens"]
    assert row.input_tokens + row.output_tokens == billed
    assert row.cost_usd == Decimal(billed) * Decimal("0.001") / 1000
    assert gemini.usage()["daily_tokens"]["used"] - before == billed


def test_a_worker_priced_by_the_packaged_example_file_still_charges_gemini(
    simulator, healthy, ledger_url, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    # Given: prices.toml's own example (one Claude model row) as the worker's price file
    lines = (
        (Path(__file__).parents[2] / "aipool" / "prices" / "prices.toml").read_text().splitlines()
    )
    start = next(i for i, line in enumerate(lines) if line.startswith('# [claude.models."'))
    prices = tmp_path / "prices.toml"
    prices.write_text("\n".join(line[2:] for line in lines[start : start + 3]) + "\n")
    healthy.set_fault("ollama", "down")
    with private_pool(8, AIPOOL_PRICES_FILE=str(prices)) as pool:
        # When: Gemini answers
        answer = send(pool, {"prompt": "Is the cluster healthy?"}).get(timeout=TIMEOUT)
    # Then: at Gemini's packaged price, not at $0
    billed = answer["usage"]["input_tokens"] + answer["usage"]["output_tokens"]
    assert answer["provider"] == "gemini"
    assert Decimal(str(answer["cost_usd"])) == Decimal(billed) * Decimal("0.001") / 1000 > 0
