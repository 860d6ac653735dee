"""Text helpers of routing: a long message's bounded view, folded text and folded patterns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from aipool.contract import parse_request
from aipool.routing.intent import SIGNALS
from aipool.routing.text import (
    HEAD_CHARS,
    TAIL_CHARS,
    bounded,
    fold,
    fold_pattern,
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


def test_fold_lowercases_ascii_one_character_for_one() -> None:
    # Given text with ASCII capitals, CJK and a letter that lowercases to two characters
    text = "Why İS Payment-API 一直 CrashLoopBackOff?"
    # When folded
    folded = fold(text)
    # Then offsets still line up with the original, and ASCII is lowercase
    assert len(folded) == len(text)
    assert folded.startswith("why ")
    assert folded[-17:] == "crashloopbackoff?"


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
        folded = re.compile(fold_pattern(pattern), flags)
        for text in texts:
            # When matched both ways, Then the same spans match
            expected = [m.span() for m in insensitive.finditer(text)]
            assert [m.span() for m in folded.finditer(fold(text))] == expected, label
