"""Text helpers of routing: a long message's bounded view, folded text and folded patterns."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aipool.contract.request import parse_request
from aipool.routing import complexity as complexity_module
from aipool.routing import intent as intent_module
from aipool.routing.intent import SIGNALS
from aipool.routing.text import (
    HEAD_CHARS,
    SPREAD_WORDS,
    TAIL_CHARS,
    Presence,
    bounded,
    compile_folded,
    fold,
    fold_pattern,
    letter_first,
    literal_first,
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


def test_a_leading_group_is_spread_only_when_every_alternative_then_starts_with_a_literal() -> None:
    # Given alternatives that start with groups, optional groups and boundaries
    pattern = r"(?:the )?same (?:x|y)|\b(?:ab|cd)\b|c(?:d)e"
    # When rewritten, Then each leading group's words become alternatives, in the order re
    # tries them (an optional group's words first, then none), boundaries moved after a letter,
    # gathered by their first character in the order they come
    assert literal_first(pattern) == (
        r"the same (?:x|y)|same (?:x|y)|a(?<!\wa)b\b|c(?:(?<!\wc)d\b|(?:d)e)"
    )
    # And a leading class of single characters is one alternative per character
    assert literal_first(r"[.!?\n]\s*x|y") == r"\.\s*x|!\s*x|\?\s*x|\n\s*x|y"
    # And a pattern is kept as letter_first writes it where an alternative would still not
    # start with a literal, a group captures, is lazy, possessive or repeated, or a class is
    # negated, a range, holds a class escape or is repeated
    kept = [
        r"(?:a|b)c|^x",
        r"(?:a|(b))c|x",
        r"(?:a|b)??c|x",
        r"(?:a|b)?+c|x",
        r"(?:a|b)+c|x",
        r"[^a]x|y",
        r"[a-z]x|y",
        r"[\s,]x|y",
        r"[ab]+x|y",
    ]
    for unchanged in kept:
        assert literal_first(unchanged) == letter_first(unchanged), unchanged
    # And a group of more words than SPREAD_WORDS has its words gathered inside it instead
    many = "|".join(f"{letter}{i}" for i in range(SPREAD_WORDS) for letter in "wv")
    gathered = "|".join(
        f"{letter}(?:{'|'.join(str(i) for i in range(SPREAD_WORDS))})" for letter in "wv"
    )
    assert literal_first(rf"\b(?:{many})\b|x") == rf"\b(?:{gathered})\b|x"


def _folded_patterns(module: ModuleType) -> list[tuple[str, str, int]]:
    """``(where, pattern, flags)`` of each pattern ``module`` compiles to match folded text: the
    first arguments of its calls to ``compile_folded``, ``_folded`` and ``_compile``, evaluated
    in the module (they are built from its constants)."""
    found = []
    for node in ast.walk(ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
            continue
        if node.func.id not in ("compile_folded", "_folded", "_compile"):
            continue
        try:
            pattern = eval(compile(ast.Expression(node.args[0]), "<pattern>", "eval"), vars(module))
        except NameError:  # the helpers' own calls, of their parameter
            continue
        flags = intent_module._FLAGS if node.func.id == "_compile" else 0
        if len(node.args) > 1:
            flags = eval(compile(ast.Expression(node.args[1]), "<flags>", "eval"), vars(module))
        found.append((f"{module.__name__}:{node.lineno}", pattern, flags))
    return found


_REWRITTEN = [
    (where, pattern, flags)
    for where, pattern, flags in (
        *_folded_patterns(intent_module),
        *_folded_patterns(complexity_module),
        *(("signal " + s[3], s[4], intent_module._FLAGS) for s in SIGNALS),
    )
    if "(?-i" not in pattern and literal_first(fold_pattern(pattern)) != fold_pattern(pattern)
]
_NOISE = [" ", "  ", "\n", "-", ".", "?", ":", "：", "_", "9", "12", "s", "'", "the ", "é", "İ"]


def test_the_routing_patterns_checked_below_include_those_whose_groups_are_spread() -> None:
    # Given the folded patterns of the keyword rules and the complexity scorer that are
    # rewritten for speed (found in the modules' source, so none is left out unnoticed)
    spread = [
        p
        for _, p, _ in _REWRITTEN
        if literal_first(fold_pattern(p)) != letter_first(fold_pattern(p))
    ]
    # Then the next test checks them all: letters moved first (28 today), groups spread (8)
    assert len(_REWRITTEN) >= 25
    assert len(spread) >= 8


@pytest.mark.parametrize(("where", "pattern", "flags"), _REWRITTEN, ids=[r[0] for r in _REWRITTEN])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_rewritten_pattern_matches_what_it_was_written_as(
    where: str, pattern: str, flags: int, data: st.DataObject
) -> None:
    # Given a text made of the pattern's own words, noise and strings it matches, folded
    written = re.compile(fold_pattern(pattern), flags)
    words = re.findall(r"[a-z]+(?: [a-z]+)?|[^\x00-\x7f]+", written.pattern)
    tokens = st.one_of(
        st.sampled_from(sorted(set(words)) + _NOISE), st.from_regex(written, fullmatch=True)
    )
    text = fold(data.draw(st.lists(tokens, max_size=12).map("".join)))
    # When matched by the pattern as written (folded) and as compiled for speed
    fast = compile_folded(pattern, flags)
    # Then the same spans match, with the same groups
    expected = [(m.span(), m.groups()) for m in written.finditer(text)]
    assert [(m.span(), m.groups()) for m in fast.finditer(text)] == expected, where


def test_presence_finds_a_line_start_alternative_at_the_start_and_after_a_newline_only() -> None:
    # Given a pattern with alternatives that start at a line start, and one that does not
    present = Presence.of(r"^\s*(?:hi|ok)\b|\bthanks\b", re.MULTILINE | re.ASCII)
    # Then it is found at the text's start, at a line's start after blank space, elsewhere not
    assert present("hi there") and present("so\n  ok then") and present("\n\nhi")
    assert not present("chi ok") and not present("say hi") and not present("")
    assert present("many thanks")


@pytest.mark.parametrize(
    ("label", "pattern"),
    [(s[3], s[4]) for s in SIGNALS if "(?-i" not in s[4]],
    ids=[s[3] for s in SIGNALS if "(?-i" not in s[4]],
)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_presence_is_whether_the_signal_matches_anywhere(
    label: str, pattern: str, data: st.DataObject
) -> None:
    # Given a text made of the signal's own words, noise, newlines and strings it matches
    flags = re.MULTILINE | re.ASCII
    written = re.compile(pattern, flags | re.IGNORECASE)
    words = re.findall(r"[a-z]+(?: [a-z]+)?|[^\x00-\x7f]+", fold_pattern(pattern))
    tokens = st.one_of(
        st.sampled_from(sorted(set(words)) + _NOISE + ["\n", "\n  ", "。"]),
        st.from_regex(written, fullmatch=True),
    )
    text = data.draw(st.lists(tokens, max_size=12).map("".join))
    # When asked whether the signal is present, Then the answer is whether it matches anywhere
    assert Presence.of(pattern, flags)(fold(text)) == (written.search(text) is not None), label
