"""How long a rate-limited provider asked to be left alone, wherever it said so.

Each provider declares the delay of a 429 its own way, and only one of them in the header HTTP
defines for it:

- ``Retry-After`` (seconds; Anthropic, Ollama behind a proxy, most gateways; or an HTTP-date, as
  RFC 9110 allows a gateway, read against the answer's own ``Date``), and the OpenAI SDK's
  ``retry-after-ms``;
- OpenAI-compatible APIs: ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens``, durations
  written like Go's (``1s``, ``6m0s``, ``20ms``), beside ``x-ratelimit-remaining-*``: the limit
  whose remaining count is 0 is the one that was hit;
- Gemini: no header at all, but the body's ``error.details[]`` holds a
  ``type.googleapis.com/google.rpc.RetryInfo`` with ``retryDelay`` (a protobuf ``Duration`` in
  JSON: ``"58s"``, ``"1.203608125s"``). When the ``google.rpc.QuotaFailure`` beside it names a
  daily quota spent (``quotaId`` ``GenerateRequestsPerDayPerProjectPerModel-FreeTier``), the
  ``retryDelay`` still says seconds, but no request succeeds before the quota resets, "at
  midnight Pacific time" (Google's rate-limits guide): the delay runs to then.

:func:`declared_delay` reads them all and answers the delay in seconds, or ``None`` when the
provider declared none (a 429 without a delay counts against the provider's breaker; one with a
delay pauses it, :mod:`aipool.attempt.call`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, time, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from zoneinfo import ZoneInfo

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
QUOTA_FAILURE = "type.googleapis.com/google.rpc.QuotaFailure"
#: Where Google's daily quotas reset, at midnight.
QUOTA_DAY_ZONE = ZoneInfo("America/Los_Angeles")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 0.000001, "µs": 0.000001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|us|µs|h|m|s)")
_RESETS = ("requests", "tokens")


def parse_retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` (or ``retry-after-ms``) header's number; ``None`` for anything else."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return _seconds(seconds)


def retry_after_date(value: str | None, date: str | None) -> float | None:
    """A ``Retry-After`` HTTP-date (RFC 9110: ``Mon, 07 Dec 2026 10:00:20 GMT``) as seconds from
    the answer's ``Date``: both are the server's clock, so this host's does not matter (without
    a ``Date``, this host's clock stands in). ``None`` when it is not a date."""
    if not value:
        return None
    try:
        until = parsedate_to_datetime(value)
        since = parsedate_to_datetime(date) if date else datetime.now(UTC)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if until.tzinfo is None or since.tzinfo is None:
        return None  # RFC 9110 dates are GMT; a date without a zone is not one
    return max(0.0, (until - since).total_seconds())


def parse_duration(value: Any) -> float | None:
    """A duration as providers write one: ``58s``, ``1.5s``, ``6m0s``, ``1h2m3.5s``, ``20ms``
    (Go's and protobuf's JSON forms), in seconds; ``None`` for anything else."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or _PART.sub("", text):
        return None  # something besides number-unit pairs: not a duration
    return _seconds(sum(float(n) * _UNITS[unit] for n, unit in _PART.findall(text)))


def declared_delay(headers: Mapping[str, str] | None, body: Any = None) -> float | None:
    """The delay a rate-limited answer declared, in seconds: its headers first, then a Google
    ``RetryInfo`` in its body; ``None`` when it declared none. ``headers`` is any mapping whose
    ``get`` ignores case (httpx's)."""
    if headers is not None:
        ms = parse_retry_after(headers.get("retry-after-ms"))
        if ms is not None:
            return ms / 1000
        seconds = parse_retry_after(headers.get("retry-after"))
        if seconds is None:
            seconds = retry_after_date(headers.get("retry-after"), headers.get("date"))
        if seconds is not None:
            return seconds
        reset = _openai_reset(headers)
        if reset is not None:
            return reset
    return _retry_info(body, headers.get("date") if headers is not None else None)


def _openai_reset(headers: Mapping[str, str]) -> float | None:
    resets = {kind: parse_duration(headers.get(f"x-ratelimit-reset-{kind}")) for kind in _RESETS}
    known = {kind: delay for kind, delay in resets.items() if delay is not None}
    if not known:
        return None
    spent = [
        delay
        for kind, delay in known.items()
        if headers.get(f"x-ratelimit-remaining-{kind}") == "0"
    ]
    # The limit with nothing left is the one that was hit; not knowing which, wait for both.
    return max(spent or known.values())


def _retry_info(body: Any, date: str | None) -> float | None:
    error = body.get("error", body) if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    if not isinstance(details, list):
        return None
    found = [detail for detail in details if isinstance(detail, Mapping)]
    delay = next(
        (parse_duration(d.get("retryDelay")) for d in found if d.get("@type") == RETRY_INFO),
        None,
    )
    if not any(_daily(d) for d in found if d.get("@type") == QUOTA_FAILURE):
        return delay
    reset = until_quota_day_ends(date)
    return max(delay or 0.0, reset) if reset is not None else delay


def _daily(failure: Mapping[str, Any]) -> bool:
    violations = failure.get("violations")
    return isinstance(violations, list) and any(
        isinstance(v, Mapping) and "PerDay" in str(v.get("quotaId", "")) for v in violations
    )


def until_quota_day_ends(date: str | None) -> float | None:
    """Seconds from the answer's ``Date`` (this host's clock without one) to the next midnight
    in Google's quota zone, when a spent daily quota comes back; ``None`` for a date that is not
    one."""
    try:
        now = parsedate_to_datetime(date) if date else datetime.now(UTC)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if now.tzinfo is None:
        return None
    local = now.astimezone(QUOTA_DAY_ZONE)
    midnight = datetime.combine(local.date() + timedelta(days=1), time(), QUOTA_DAY_ZONE)
    # In UTC: the difference of two times of one zone ignores a daylight-saving change between.
    return (midnight.astimezone(UTC) - now.astimezone(UTC)).total_seconds()


def _seconds(value: float) -> float | None:
    return value if math.isfinite(value) and value >= 0 else None
