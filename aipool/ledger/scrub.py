"""Redaction of error messages before they reach the ledger or an alert."""

from __future__ import annotations

import re

#: Longest error message stored; provider errors can echo whole request bodies.
MAX_ERROR_LENGTH = 500

REDACTED = "[REDACTED]"

# Order matters: header forms first, so "Authorization: Bearer sk-..." loses the whole value.
_PATTERNS = [
    re.compile(
        r"(?i)\b(authorization|x-api-key|x-goog-api-key|api[-_]?key|access[-_]?token"
        r"|secret|password|token)\b(\s*[:=]\s*|\"\s*:\s*\")(bearer\s+)?[^\s\"',;&]+"
    ),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\bsk-(?:ant-)?[A-Za-z0-9_-]{8,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{20,}"),
    re.compile(r"\bnvapi-[A-Za-z0-9_-]{8,}"),
    re.compile(r"\b(?:gh[pousr]|xox[abpr])[-_][A-Za-z0-9-]{8,}"),
    re.compile(r"(?i)([?&](?:key|api_key|token|access_token)=)[^&\s]+"),
    # Long hex or base64-ish runs are secrets far more often than they are useful context.
    re.compile(r"\b[0-9a-fA-F]{32,}\b"),
    re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{40,}={0,2}"),
]


def _replace(match: re.Match[str]) -> str:
    groups = match.groups()
    if len(groups) == 3:
        # Keep the header or parameter name so the message still says what was wrong.
        return f"{groups[0]}{groups[1]}{REDACTED}"
    if len(groups) == 1:
        return f"{groups[0]}{REDACTED}"
    return REDACTED


def scrub_error(message: str | None, limit: int = MAX_ERROR_LENGTH) -> str | None:
    """``message`` with anything that looks like a credential replaced and its length capped.

    ``None`` stays ``None``. The result never exceeds ``limit`` characters.
    """
    if message is None:
        return None
    text = str(message)
    for pattern in _PATTERNS:
        text = pattern.sub(_replace, text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
