"""The ledger's name for :func:`aipool.scrub.scrub`, kept for older imports: one scrubber only."""

from __future__ import annotations

from aipool.scrub import MAX_ERROR_LENGTH, REDACTED
from aipool.scrub import scrub as scrub_error

__all__ = ["MAX_ERROR_LENGTH", "REDACTED", "scrub_error"]
