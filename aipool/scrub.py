"""The one scrubber: no credential leaves the pool in an error, a log line, an alert or the ledger.

:func:`scrub` removes, in order:

1. the values of the configured secrets (:data:`aipool.secrets.SECRET_NAMES`, read the same way
   the adapters read them: variable, ``*_FILE``, ``/run/secrets``), whatever they look like;
2. credentials by shape: header and parameter values (``x-api-key: ...``, ``?key=...``), bearer
   tokens, the vendors' key prefixes (``sk-``, ``AIza``, ``nvapi-`` ...), the password in a URL,
   long hex and base64 runs.

Provider text reaches people through several doors, and each goes through here: adapters scrub
the error messages they build from a provider's body, the ledger scrubs what it stores, notifiers
scrub what they send, and :class:`ScrubFilter` scrubs every log record of a worker process.
"""

from __future__ import annotations

import logging
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
    (("=",), re.compile(r"(?i)([?&](?:key|api_key|token|access_token)=)[^&\s]+")),
    # The password of a URL's user info: scheme://user:<password>@host.
    (("://",), re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+(?=@)")),
    # Long hex runs are secrets (or digests) far more often than they are useful context.
    ((), re.compile(r"\b[0-9a-fA-F]{32,}\b")),
]
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
    """The configured secret values and their URL-encoded forms, longest first, read lazily.

    Scrubbing runs for every log record, so the values are cached for :data:`SECRETS_TTL_S`
    (a rotated secret file is picked up after that) or until :func:`forget_configured_secrets`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expires = 0.0
        self._needles: tuple[str, ...] = ()

    def needles(self) -> tuple[str, ...]:
        now = time.monotonic()
        if now < self._expires:
            return self._needles
        found: set[str] = set()
        for value in configured_secrets():
            if len(value) >= MIN_SECRET_LENGTH:
                # A key sent as a query parameter (``?key=``) is logged URL-encoded.
                found.update({value, quote(value, safe="")})
        needles = tuple(sorted(found, key=len, reverse=True))
        with self._lock:
            self._needles, self._expires = needles, now + SECRETS_TTL_S
        return needles

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
    for needle in _secrets.needles():
        text = text.replace(needle, REDACTED)
    lowered = text.lower()
    for cues, pattern in _PATTERNS:
        if not cues or any(cue in lowered for cue in cues):
            text = pattern.sub(_replace, text)
    text = _LONG_RUN.sub(_replace_long_run, text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


class ScrubFilter(logging.Filter):
    """Scrubs every record that passes through the handler it is attached to.

    The message is rendered with its arguments first (an argument may be the secret) and the
    record keeps the scrubbed text with no arguments; a traceback is rendered and scrubbed into
    ``exc_text``, which formatters print instead of rendering ``exc_info`` again.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_aipool_scrubbed", False):
            return True  # several handlers share one record
        try:
            message = record.getMessage()
        except Exception:
            # A broken format string: keep what can be shown rather than losing the record.
            message = f"{record.msg!s} {record.args!r}"
        record.msg = scrub(message, MAX_LOG_LENGTH)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text, MAX_LOG_LENGTH)
        if record.stack_info:
            record.stack_info = scrub(record.stack_info, MAX_LOG_LENGTH)
        record._aipool_scrubbed = True
        return True


def install_log_scrubbing(*loggers: logging.Logger) -> int:
    """Attach one :class:`ScrubFilter` to every handler of ``loggers`` (default: the root logger).

    Handler filters see every record the handler emits, including those propagated from child
    loggers such as ``aipool.hop``; a logger's own filters would not. Idempotent; returns how many
    handlers got a filter.
    """
    added = 0
    for logger in loggers or (logging.getLogger(),):
        for handler in logger.handlers:
            if not any(isinstance(f, ScrubFilter) for f in handler.filters):
                handler.addFilter(ScrubFilter())
                added += 1
    return added
