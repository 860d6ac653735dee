"""Text helpers of routing: a long message's bounded view, folded text and folded patterns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aipool.contract.request import parse_request
from aipool.routing.intent import SIGNALS
from aipool.routing.text import (
    HEAD_CHARS,
    TAIL_CHARS,
    bounded,
    compile_folded,
    fold,
    fold_pattern,
    letter_first,
    split_text,
)

LABELLED = Path(__file__).with_name("labelled_requests.jsonl")


def test_a_message_within_the_bound_is_read_whole() -> None:
    # Given a message as long as the bound, When bounded, Then nothing is cut
    text = "a" * (HEAD_CHARS + TAIL_CHARS)
    assert bounded(text) is text


def test_a_long_message_keeps_its_head_and_tail() -> None:
    # Given a 100 KB message with a marked start and end
    text = "START " + "x" * 100_000 + " END"
    # When bounded
    view = bounded(text)
    # Then its first and last characters are kept, joined by a newline, and the middle is gone
    assert view == text[:HEAD_CHARS] + "\n" + text[-TAIL_CHARS:]
    assert view.startswith("START ") and view.endswith(" END")


def test_a_block_cut_in_the_middle_stays_a_block_and_the_prose_after_it_stays_prose() -> None:
    # Given prose, then a fenced log that opens in the head, closes in the tail... then a question
    log = "2026-11-30T10:00:01Z ERROR payment-api OOMKilled\n" * 2000
    text = "Look at this:\n```\n" + log + "```\nwhy does it keep dying?"
    # When bounded and split
    split = split_text(bounded(text))
    # Then the question is prose and the log is one block
    assert "why does it keep dying?" in split.prose
    assert len(split.blocks) == 1


def test_a_block_wholly_inside_the_middle_does_not_turn_the_tail_into_a_block() -> None:
    # Given a long prose message with one fenced block wholly inside its middle, closed there,
    # and a second block in its tail
    prose = "the checkout page is slow. " * 200
    text = prose + "```\nold log\n```\n" + prose + "```\ntail block\n```\nsummarise please"
    # When bounded and split
    split = split_text(bounded(text))
    # Then the tail's block is a block and the ask after it is prose
    assert split.blocks == ("tail block\n",)
    assert "summarise please" in split.prose


def test_fold_lowercases_ascii_letters_only_one_character_for_one() -> None:
    # Given text with ASCII capitals, CJK, a letter that lowercases to two characters, the
    # Kelvin sign (which lowercases to an ASCII "k") and a lone surrogate
    text = "Why İS Payment-API 一直 CrashLoopBackOff? \u212a \ud800 É"
    # When folded
    folded = fold(text)
    # Then ASCII is lowercase and every other character is kept, so offsets line up
    assert folded == "why İs payment-api 一直 crashloopbackoff? \u212a \ud800 É"


def test_fold_pattern_keeps_escapes_and_refuses_case_sensitive_groups() -> None:
    # Given patterns with escapes and classes
    assert fold_pattern(r"\bRCA\b|\S+Error|[A-Z]\d") == r"\brca\b|\S+error|[a-z]\d"
    # Given a pattern with a case-sensitive group, Then it cannot be folded
    with pytest.raises(ValueError):
        fold_pattern(r"(?-i:Kube[A-Z]\w+)")


def _texts() -> list[str]:
    with LABELLED.open(encoding="utf-8") as handle:
        requests = [parse_request(json.loads(line)["request"]) for line in handle if line.strip()]
    texts = [request.text() for request in requests]
    return texts + [text.upper() for text in texts] + [text.swapcase() for text in texts]


def test_folded_signals_match_exactly_what_case_insensitive_signals_match() -> None:
    # Given every intent signal, and the labelled texts in three casings
    texts = _texts()
    flags = re.MULTILINE | re.ASCII
    for _intent, _kind, _weight, label, pattern in SIGNALS:
        if "(?-i" in pattern:
            continue
        insensitive = re.compile(pattern, flags | re.IGNORECASE)
        folded = compile_folded(pattern, flags)
        for text in texts:
            # When matched both ways, Then the same spans match
            expected = [m.span() for m in insensitive.finditer(text)]
            assert [m.span() for m in folded.finditer(fold(text))] == expected, label


def test_a_word_boundary_before_a_letter_moves_after_the_letter_in_top_level_alternatives() -> None:
    # Given alternatives that start with a boundary and a letter, and some that cannot move
    pattern = r"\bwhy\b|為什麼|\b(?:a|b)|\bx?y|(?:\bz|q)|[|\]]\bk"
    # When rewritten, Then only top-level "\b<letter>" starts change, to the letter first
    assert letter_first(pattern) == r"w(?<!\ww)hy\b|為什麼|\b(?:a|b)|\bx?y|(?:\bz|q)|[|\]]\bk"
    assert letter_first(r"[]|]|\bab") == r"[]|]|a(?<!\wa)b"


_WORDS = st.sampled_from(
    ["why", "what", "how", "review", "please", "restart", "alert", "down", "pr", "rca", "a",
     "_", "9", "x", "o", " ", "\n", "-", ".", "?", "為什麼", "告警", "幫我", "重啟", "é", "İ", "\u212a"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, max_size=40).map("".join))
def test_folded_signals_match_what_case_insensitive_signals_match_for_any_text(text: str) -> None:
    # Given any text made of the signals' own vocabulary, in any casing
    flags = re.MULTILINE | re.ASCII
    for cased in (text, text.upper(), text.title()):
        for _intent, _kind, _weight, label, pattern in SIGNALS:
            if "(?-i" in pattern:
                continue
            # When matched case-insensitively and folded, Then the same spans match
            expected = [
                m.span() for m in re.compile(pattern, flags | re.IGNORECASE).finditer(cased)
            ]
            got = [m.span() for m in compile_folded(pattern, flags).finditer(fold(cased))]
            assert got == expected, label
