"""The vocabulary names every outcome and error code once, each with a meaning, and every store and
view of the pool speaks it."""

from __future__ import annotations

import json
from pathlib import Path

from aipool.contract.vocabulary import (
    CALLED_OUTCOMES,
    ERROR_CODES,
    ERROR_MEANINGS,
    OUTCOME_MEANINGS,
    OUTCOMES,
    SKIP_WORDS,
    TERMINAL_OUTCOMES,
    outcome_named,
)
from aipool.ledger.record import UsageRecord

SCHEMA = Path(__file__).parents[3] / "docs" / "contract.schema.json"


def test_every_name_has_exactly_one_meaning() -> None:
    assert list(OUTCOME_MEANINGS) == list(OUTCOMES)
    assert list(ERROR_MEANINGS) == list(ERROR_CODES)
    assert all(
        meaning.strip() for meaning in [*OUTCOME_MEANINGS.values(), *ERROR_MEANINGS.values()]
    )


def test_every_outcome_is_called_terminal_or_a_counted_skip_and_only_one() -> None:
    groups = [set(CALLED_OUTCOMES), set(TERMINAL_OUTCOMES), set(SKIP_WORDS)]
    assert set().union(*groups) == set(OUTCOMES)
    assert sum(len(g) for g in groups) == len(OUTCOMES)


def test_the_ledger_stores_every_outcome_of_the_vocabulary() -> None:
    # guard_unavailable was once an outcome the hop runner recorded and the ledger refused (#25).
    for outcome in OUTCOMES:
        record = UsageRecord("r", 0, "ollama", "m", outcome, success=outcome == "ok")
        assert record.outcome == outcome


def test_the_published_schema_enumerates_the_vocabulary() -> None:
    definitions = json.loads(SCHEMA.read_text())["$defs"]
    assert definitions["Attempt"]["properties"]["outcome"]["enum"] == list(OUTCOMES)
    assert definitions["ResultError"]["properties"]["code"]["enum"] == list(ERROR_CODES)


def test_a_name_outside_the_vocabulary_is_no_outcome() -> None:
    assert outcome_named("guard_unavailable") == "guard_unavailable"
    assert outcome_named("Guard_Unavailable") is None
    assert outcome_named(None) is None
