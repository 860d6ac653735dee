"""The routing corpus: big enough, varied, split by group before tuning, its test split frozen."""

from __future__ import annotations

from collections import Counter

from aipool.routing import corpus
from aipool.routing.corpus.generate import FIT_SERVICES, TEST_SERVICES, build, dump
from aipool.routing.intent import Intent
from aipool.routing.tier_names import TIERS
from aipool.routing.tiers import tier_for


def _all() -> dict[str, list[dict]]:
    return {split: corpus.load(split) for split in corpus.SPLITS}


def test_the_test_split_is_the_frozen_one() -> None:
    # Given the test split on disk and the hash recorded when it was frozen
    # Then they agree: nobody edited or regenerated the test split
    assert corpus.digest("test") == corpus.frozen_digest()


def test_the_generator_reproduces_the_shipped_splits() -> None:
    # Given the generator, When it builds the corpus again
    built = build()
    # Then every split is byte for byte the shipped file (no hand edits after generation)
    for split in corpus.SPLITS:
        assert dump(built[split]) == corpus.path(split).read_bytes(), split


def test_corpus_is_large_and_covers_intents_languages_and_levels() -> None:
    rows = [r for rows in _all().values() for r in rows]
    # Then at least 1,000 requests over six intents, five levels, three languages
    assert len(rows) >= 1000
    assert {r["intent"] for r in rows} == {i.value for i in Intent}
    assert {r["complexity"] for r in rows} == {1, 2, 3, 4, 5}
    assert {r["lang"] for r in rows} == {"en", "zh", "mixed"}
    # And hundreds were written by hand
    assert sum(r["source"] == "hand" for r in rows) >= 250


def test_no_template_family_has_members_in_two_splits() -> None:
    # Given every row's group (a template family, or one hand-written line)
    where: dict[str, set[str]] = {}
    for split, rows in _all().items():
        for row in rows:
            group = row["source"] if row["source"] != "hand" else row["id"]
            where.setdefault(group, set()).add(split)
    # Then each group lives in exactly one split
    crossing = {group: splits for group, splits in where.items() if len(splits) > 1}
    assert crossing == {}


def test_the_test_split_is_written_apart_from_everything_fitted() -> None:
    assert not set(FIT_SERVICES) & set(TEST_SERVICES)
    # Given the rows the model and the settings are fitted on, and the test split
    fitting = [r["text"] for s in ("train", "dev") for r in corpus.load(s)]
    tested = corpus.load("test")
    # Then the test split was written by hand, none of its texts is fitted on
    assert {r["source"] for r in tested} == {"hand"}
    assert not {r["text"] for r in tested} & set(fitting)
    # And none names a service the templates fill in (every template now fits the model)
    named = [name for r in tested for name in (*FIT_SERVICES, *TEST_SERVICES) if name in r["text"]]
    assert named == []


def test_every_split_has_every_intent() -> None:
    for split, rows in _all().items():
        assert set(Counter(r["intent"] for r in rows)) == {i.value for i in Intent}, split


def test_every_row_carries_the_tier_the_route_table_gives_its_labels() -> None:
    for rows in _all().values():
        for row in rows:
            assert row["tier"] in TIERS
            assert row["tier"] == tier_for(
                row["intent"],
                row["complexity"],
                priority=row.get("priority", "normal"),
                has_tools=bool(row.get("tools")),
            )
