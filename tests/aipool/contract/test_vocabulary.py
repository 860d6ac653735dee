"""The vocabulary names every outcome and error code once, each with a meaning, and every store and
view of the pool speaks it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aipool.contract.vocabulary import (
    CACHED_OUTCOMES,
    CALLED_OUTCOMES,
    ERROR_CODES,
    ERROR_MEANINGS,
    ERROR_TERMS,
    FAILURE_CODES,
    FAILURE_TERMS,
    OUTCOME_MEANINGS,
    OUTCOME_TERMS,
    OUTCOMES,
    SKIP_OUTCOMES,
    TERMINAL_OUTCOMES,
    error_word,
    failure_word,
    outcome_named,
    outcome_word,
)
from aipool.errors import ProviderError
from aipool.ledger.record import UsageRecord

SCHEMA = Path(__file__).parents[3] / "docs" / "contract.schema.json"


def test_every_name_has_exactly_one_meaning_and_a_word_in_each_language() -> None:
    assert list(OUTCOME_MEANINGS) == list(OUTCOMES)
    assert list(ERROR_MEANINGS) == list(ERROR_CODES)
    assert list(FAILURE_TERMS) == list(FAILURE_CODES)
    terms = [*OUTCOME_TERMS.values(), *FAILURE_TERMS.values(), *ERROR_TERMS.values()]
    assert all(t.meaning.strip() and t.en.strip() and t.zh.strip() for t in terms)
    # zh-TW words are written in Chinese, not copied from the English
    assert all(t.zh != t.en for t in terms)


def test_every_failure_code_is_the_code_of_a_provider_error_class() -> None:
    classes: list[type[ProviderError]] = [ProviderError]
    codes = set()
    while classes:
        cls = classes.pop()
        codes.add(cls.code)
        classes.extend(cls.__subclasses__())
    # abandoned: a call whose worker died (the ledger's outcome), not an exception
    assert codes | {"abandoned"} == set(FAILURE_CODES)


def test_a_name_without_words_is_refused_at_import() -> None:
    from aipool.contract import vocabulary

    with pytest.raises(ImportError, match=r"words missing for \['brand_new'\]"):
        vocabulary._complete(OUTCOME_TERMS, (*OUTCOMES, "brand_new"), "outcomes")


def test_a_name_outside_the_vocabulary_is_shown_as_it_is() -> None:
    assert outcome_word("from_an_old_pool", "zh-TW") == "from_an_old_pool"
    assert outcome_word("context_too_long", "en") == "context"
    assert failure_word("timeout", "zh-TW") == "逾時"
    assert error_word("deadline", "en") == "deadline passed"


def test_every_outcome_is_called_terminal_cached_or_a_counted_skip_and_only_one() -> None:
    groups = [
        set(CALLED_OUTCOMES),
        set(TERMINAL_OUTCOMES),
        set(CACHED_OUTCOMES),
        set(SKIP_OUTCOMES),
    ]
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
