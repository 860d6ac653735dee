"""The one scrubber: no credential leaves the pool in an error, a log line, an alert or the ledger.

:func:`scrub` removes, in order:

1. the values of the configured secrets (:data:`aipool.secrets.SECRET_NAMES`, read the same way
   the adapters read them: variable, ``*_FILE``, ``/run/secrets``), whatever they look like;
2. credentials by shape: header and parameter values (``x-api-key: ...``, ``?key=...``), bearer
   tokens, the vendors' key prefixes (``sk-``, ``AIza``, ``nvapi-`` ...), the password in a URL,
   long hex and base64 runs.

A key is matched whole even when it is split across whitespace or line breaks (a provider's
message wrapped at 76 columns, a key pasted with a newline in it, a repr's ``\\n``): a configured
value matches with any run of whitespace between its characters, and a key of a known vendor shape
(``AIza`` + 35, ``nvapi-`` + 64, ``sk-ant-`` + 80 or more) takes up to four following pieces of key
characters until it has its length.

Provider text reaches people through several doors, and each goes through here: adapters scrub
the error messages they build from a provider's body, the ledger scrubs what it stores, notifiers
scrub what they send, and :mod:`aipool.log_guard` scrubs every log record a worker, beat or Flower
process makes, as it is made.
"""

from __future__ import annotations

import re
import threading
import time
from urllib.parse import quote

from aipool.secrets import configured_secrets

#: Longest error message stored; provider errors can echo whole request bodies.
MAX_ERROR_LENGTH = 500
#: Longest log message kept: long enough for any traceback, short enough that a provider echoing
#: a whole request body cannot flood the log.
MAX_LOG_LENGTH = 20_000

REDACTED = "[REDACTED]"

#: Configured values shorter than this are not real credentials (a placeholder, a test value), and
#: replacing every occurrence of a short word would mangle every message.
MIN_SECRET_LENGTH = 8
#: How long configured values are trusted before they are read again (secret files rotate).
SECRETS_TTL_S = 30.0

# Order matters: header forms first, so "Authorization: Bearer sk-..." loses the whole value.
# Each pattern runs only when the lower-cased text holds one of its cues: scrubbing runs on every
# log line, and a cue test is far cheaper than a regex pass over text that cannot match.
_PATTERNS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    (
        ("authorization", "api", "token", "secret", "password"),
        re.compile(
            r"(?i)\b(authorization|x-api-key|x-goog-api-key|api[-_]?key|access[-_]?token"
            r"|secret|password|token)\b(\s*[:=]\s*|\"\s*:\s*\")(bearer\s+)?[^\s\"',;&]+"
        ),
    ),
    (("bearer",), re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}")),
    (
        ("sk-", "aiza", "nvapi-", "gh", "xox"),
        re.compile(
            r"\b(?:sk-(?:ant-)?[A-Za-z0-9_-]{8,}|AIza[0-9A-Za-z_-]{20,}|nvapi-[A-Za-z0-9_-]{8,}"
            r"|(?:gh[pousr]|xox[abpr])[-_][A-Za-z0-9-]{8,})"
        ),
    ),
    # Every name it matches ends in "key=" or "token=": a bare "=" (every key=value log line)
    # is no cue.
    (("key=", "token="), re.compile(r"(?i)([?&](?:key|api_key|token|access_token)=)[^&\s]+")),
    # The password of a URL's user info: scheme://user:<password>@host.
    (("://",), re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+(?=@)")),
    # Long hex runs are secrets (or digests) far more often than they are useful context.
    ((), re.compile(r"\b[0-9a-fA-F]{32,}\b")),
]
#: What may sit inside a key that was wrapped or pasted in pieces: whitespace, line breaks, or the
#: escaped breaks of a repr or a JSON string (``\\n``).
_BREAK = r"(?:\s|\\[nrt])"
#: Vendor key prefixes and how many key characters follow them (at least).
_KEY_BODY = {"AIza": 35, "nvapi-": 64, "sk-ant-": 80}
_KEY_START = re.compile(r"\b(AIza|nvapi-|sk-ant-)([A-Za-z0-9_-]*)")
_KEY_PIECE = re.compile(rf"{_BREAK}+([A-Za-z0-9_-]+)")
#: A split key takes at most this many following pieces: a key wrapped at 10 columns is already
#: rarer than prose that happens to follow a bare prefix.
MAX_KEY_PIECES = 4


def _join_split_keys(text: str) -> str:
    """``text`` with every vendor-shaped key that is split across breaks replaced whole.

    From each key prefix, following pieces of key characters are taken, up to
    :data:`MAX_KEY_PIECES`, until the key has its vendor's length; only a key that reaches it is
    replaced (so a prefix followed by ordinary words stays as it is). An unbroken key is left to
    the shape patterns.
    """
    kept: list[str] = []
    position = 0
    for start in _KEY_START.finditer(text):
        if start.start() < position:
            continue  # inside a key already replaced
        needed = _KEY_BODY[start.group(1)]
        have, end, pieces = len(start.group(2)), start.end(), 0
        while have < needed and pieces < MAX_KEY_PIECES:
            piece = _KEY_PIECE.match(text, end)
            if piece is None:
                break
            have, end, pieces = have + len(piece.group(1)), piece.end(), pieces + 1
        if pieces and have >= needed:
            kept += [text[position : start.start()], REDACTED]
            position = end
    return "".join(kept) + text[position:] if kept else text


def _split_tolerant(values: list[str]) -> re.Pattern[str] | None:
    """One pattern matching any of ``values`` with breaks between its characters."""
    if not values:
        return None
    alternatives = (f"{_BREAK}*".join(re.escape(c) for c in value) for value in values)
    return re.compile("|".join(alternatives))


# Long base64-ish runs: a key when they mix letters and digits, unless they read like a file path
# (tracebacks are full of long lower-case paths such as ``11/site-packages/google/genai/...``).
_LONG_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{40,}={0,2}")


def _replace(match: re.Match[str]) -> str:
    groups = match.groups()
    if len(groups) == 3:
        # Keep the header or parameter name so the message still says what was wrong.
        return f"{groups[0]}{groups[1]}{REDACTED}"
    if len(groups) == 1:
        return f"{groups[0]}{REDACTED}"
    return REDACTED


def _replace_long_run(match: re.Match[str]) -> str:
    run = match.group(0)
    has_digit = any(c.isdigit() for c in run)
    has_letter = any(c.isalpha() for c in run)
    looks_like_path = "/" in run and not any(c.isupper() for c in run)
    return REDACTED if has_digit and has_letter and not looks_like_path else run


class _ConfiguredSecrets:
    """The configured secret values and their URL-encoded forms, longest first, read lazily, and
    one pattern matching the values split across breaks.

    Scrubbing runs for every log record, so the values are cached for :data:`SECRETS_TTL_S`
    (a rotated secret file is picked up after that) or until :func:`forget_configured_secrets`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expires = 0.0
        self._needles: tuple[str, ...] = ()
        self._split: re.Pattern[str] | None = None

    def needles(self) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
        now = time.monotonic()
        if now < self._expires:
            return self._needles, self._split
        values = {v for v in configured_secrets() if len(v) >= MIN_SECRET_LENGTH}
        # A key sent as a query parameter (``?key=``) is logged URL-encoded.
        found = values | {quote(value, safe="") for value in values}
        needles = tuple(sorted(found, key=len, reverse=True))
        split = _split_tolerant(sorted(values, key=len, reverse=True))
        with self._lock:
            self._needles, self._split, self._expires = needles, split, now + SECRETS_TTL_S
        return needles, split

    def forget(self) -> None:
        """Read the values again on next use."""
        with self._lock:
            self._expires = 0.0


_secrets = _ConfiguredSecrets()


def forget_configured_secrets() -> None:
    """Drop the cached secret values: after changing a key's variable, or rotating it in place."""
    _secrets.forget()


def scrub(text: str | None, limit: int | None = MAX_ERROR_LENGTH) -> str | None:
    """``text`` with every credential replaced by ``[REDACTED]`` and its length capped.

    ``None`` stays ``None``. The result never exceeds ``limit`` characters (``None``: no cap).
    """
    if text is None:
        return None
    text = str(text)
    needles, split = _secrets.needles()
    for needle in needles:
        text = text.replace(needle, REDACTED)
    if split is not None:
        text = split.sub(REDACTED, text)
    if "AIza" in text or "nvapi-" in text or "sk-ant-" in text:
        text = _join_split_keys(text)
    lowered = text.lower()
    for cues, pattern in _PATTERNS:
        if not cues or any(cue in lowered for cue in cues):
            text = pattern.sub(_replace, text)
    text = _LONG_RUN.sub(_replace_long_run, text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
