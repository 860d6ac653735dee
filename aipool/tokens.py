"""Token estimates made before a provider reports real usage.

Used to reserve quota before a call and to refuse oversized prompts. The estimate leans high on
purpose: ASCII text runs about four characters per token, while CJK text runs about one character
per token, so each non-ASCII character counts as one token.
"""

from __future__ import annotations


def estimate_tokens(text: str) -> int:
    """Return an upper-leaning estimate of the tokens in ``text`` (at least 1 for non-empty text)."""
    if not text:
        return 0
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    other = len(text) - ascii_chars
    return max(1, (ascii_chars + 3) // 4 + other)
