"""UsageRecord: the JSON handed from worker to ledger round-trips exactly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from aipool.ledger.record import UsageRecord, storable_text


def test_given_a_record_when_serialised_and_parsed_then_it_is_equal() -> None:
    # Given
    rec = UsageRecord(
        request_id="req-1",
        attempt=2,
        provider="gemini",
        model="gemini-2.5-flash",
        outcome="ok",
        success=True,
        input_tokens=120,
        output_tokens=30,
        latency_ms=412,
        user_id="u-7",
        intent="chat",
        complexity=3,
        fallback_position=1,
        cost_usd=Decimal("0.000150"),
        created_at=datetime(2026, 3, 1, 15, 59, 59, tzinfo=timezone(timedelta(hours=8))),
    )
    # When
    back = UsageRecord.from_json(rec.to_json())
    # Then
    assert back == rec
    assert back.created_at.tzinfo is UTC
    assert back.tokens == 150


def test_given_no_created_at_when_built_then_it_is_now_in_utc() -> None:
    rec = UsageRecord("r", 0, "ollama", "llama3.2:3b", "ok", True)
    assert rec.created_at.tzinfo is UTC
    assert abs(datetime.now(UTC) - rec.created_at) < timedelta(seconds=5)


def test_given_an_unknown_outcome_when_built_then_it_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown outcome"):
        UsageRecord("r", 0, "ollama", "m", "exploded", False)


def test_given_a_naive_timestamp_when_built_then_it_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        UsageRecord("r", 0, "ollama", "m", "ok", True, created_at=datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("value", "limit", "stored"),
    [
        ("payments-api", None, "payments-api"),
        ("pay\x00ments", None, "payments"),
        ("ollama → gemini", None, "ollama → gemini"),
        ("bad \ud800 half", None, "bad \ufffd half"),
        ("\ud83d\ude00 joined", None, "😀 joined"),
        ("abcdef", 3, "abc"),
        ("日本語のテキスト", 3, "日本語"),
        ("x\x00\ud800yz", 3, "x\ufffdy"),
    ],
    ids=["ascii", "nul", "non-ascii", "lone-surrogate", "split-pair", "cut", "cut-cjk", "all"],
)
def test_text_is_stored_without_nul_or_lone_surrogates_and_cut_to_its_column(
    value: str, limit: int | None, stored: str
) -> None:
    assert storable_text(value, limit) == stored
