"""Token estimates: ceil(ASCII characters / 4) plus one per other character, counted in C."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aipool.tokens import estimate_tokens


def _by_definition(text: str) -> int:
    """The documented estimate, one character at a time."""
    if not text:
        return 0
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return max(1, (ascii_chars + 3) // 4 + len(text) - ascii_chars)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("為什麼", 3),
        ("payment-api 一直 OOM", 6),  # 14 ASCII characters (4 tokens) and 2 CJK
        ("ok 🙂", 2),
        ("x" * 100_000, 25_000),
        ("告" * 30_000, 30_000),
    ],
)
def test_estimates_of_typical_texts(text: str, tokens: int) -> None:
    # Given ASCII, CJK, mixed and emoji texts, When estimated, Then four ASCII characters make a
    # token (rounded up) and every other character is a token of its own
    assert estimate_tokens(text) == tokens


@given(st.text())
def test_estimate_matches_its_definition_for_any_text(text: str) -> None:
    # Given any text (lone surrogates included), When estimated, Then it is the documented count
    assert estimate_tokens(text) == _by_definition(text)


class _NoWalking(str):
    """A text that refuses to be walked character by character in Python."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("estimate_tokens walked the text in a Python loop")


@pytest.mark.parametrize("text", ["plain ASCII " * 1000, "中文與 English 混合 " * 1000])
def test_a_long_prompt_is_counted_without_a_python_loop_per_character(text: str) -> None:
    # Given a long prompt that fails if iterated in Python (every hop estimates its prompt)
    prompt = _NoWalking(text)
    # When it is estimated, Then the count comes from whole-string operations, and is right
    assert estimate_tokens(prompt) == _by_definition(text)
