"""Celery's tracer without a traceback for a hop that was re-dispatched.

``Task.replace`` ends a hop by raising ``Ignore``, and Celery's tracer wraps every exception it
catches in billiard's ``ExceptionInfo``: twice for ``Ignore`` (the value sent back to the
worker's parent, and the one its "ignored" log line is made from). Each copies every frame of the
traceback, code positions included (about 2,300 for the tracer's own ``trace_task``), and formats
it as text; the parent only reads the exception (to acknowledge the message), and the log line of
an ignored task shows no traceback. That was about 0.4 ms of CPU per re-dispatch on a quiet
2-core machine, more on a busy one (docs/benchmarks.md). Every other exception keeps its full
traceback.
"""

from __future__ import annotations

import sys
from typing import Any

from billiard.einfo import ExceptionInfo, ExceptionWithTraceback  # type: ignore[attr-defined]  # billiard's, not in celery-types' stub
from celery.app import trace
from celery.exceptions import Ignore


class TracedExceptionInfo(ExceptionInfo):
    """billiard's ``ExceptionInfo``, with no traceback kept or formatted for ``Ignore``."""

    def __init__(self, exc_info: Any = None, internal: bool = False) -> None:
        kind, exception, tb = exc_info or sys.exc_info()
        if not isinstance(exception, Ignore):
            super().__init__((kind, exception, tb), internal)  # type: ignore[arg-type]  # the stub wants no None; billiard takes sys.exc_info()'s
            return
        self.type = kind  # type: ignore[misc]  # a property in the stub, an attribute in billiard
        self.tb = None
        self.traceback = ""
        self.internal = internal
        self.exception = ExceptionWithTraceback(exception, "")


def install() -> None:
    """Make Celery's tracer use :class:`TracedExceptionInfo` (in this process and its forks)."""
    trace.ExceptionInfo = TracedExceptionInfo  # type: ignore[attr-defined]  # trace's own import of it, not in the stub
