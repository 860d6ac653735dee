"""Every log record of a pool process is made safe as it is made, before any handler sees it: no
credential, and no message body.

:func:`install` wraps the process's log record factory (``logging.setLogRecordFactory``): the
message is rendered with its arguments (an argument may be the secret) and the record keeps the
scrubbed text with no arguments; a traceback is rendered and scrubbed into ``exc_text``, which
formatters print instead of rendering ``exc_info`` again; the stack is scrubbed too. Records that
print a request's body (:data:`BODY_TEMPLATES`: Celery's ``TaskPool: Apply`` line at DEBUG prints
the raw message, which holds an ``ai.generate`` request's prompt, whenever the headers before it
are short; the anthropic SDK's ``Request options`` line at DEBUG prints the messages it sends)
keep their line with those arguments withheld.

Why the factory and not a filter on handlers (what the pool did before): every logger makes its
records through the factory, so no handler of any logger can see a raw record, whether it is
attached to the root, to ``celery.task`` (which does not propagate), to a library's own logger, or
added after start-up by a custom ``setup_logging`` receiver or a library. A handler filter covers
only the handlers present when it is attached, and a logger filter does not see its children's
records. The factory is called only for records whose logger is enabled for their level, so a
disabled DEBUG line costs nothing; prefork children inherit it with the process.

Installed by the worker, beat and Flower processes (``workers.signals``, imported by the app) at
import, before Celery sets up logging.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from aipool.scrub import MAX_LOG_LENGTH, scrub

#: Log templates that print a task message's arguments, and the positions of those arguments.
BODY_TEMPLATES: dict[str, tuple[int, ...]] = {
    # celery.concurrency.base: the pool's apply, with (type, id, request, body, ...) as its args.
    "TaskPool: Apply %s (args:%s kwargs:%s)": (1, 2),
    # anthropic._base_client at DEBUG: the request it sends, messages included.
    "Request options: %s": (0,),
}
#: What a withheld argument is shown as.
WITHHELD = "<withheld>"

_installed: Callable[..., logging.LogRecord] | None = None
_lock = threading.Lock()


def scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """``record`` with its message, traceback and stack scrubbed, and a message body it would
    print withheld, in place."""
    withheld = BODY_TEMPLATES.get(record.msg) if isinstance(record.msg, str) else None
    if withheld:
        # A lone dict argument is kept by LogRecord as the args themselves (for %(name)s forms).
        args = (record.args,) if isinstance(record.args, Mapping) else record.args or ()
        record.args = tuple(WITHHELD if i in withheld else a for i, a in enumerate(args))
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
    return record


def install() -> None:
    """Scrub every record this process makes from now on. Idempotent; keeps any factory that was
    installed before (records are made by it, then scrubbed)."""
    global _installed
    with _lock:
        current = logging.getLogRecordFactory()
        if current is _installed:
            return
        made_by = current

        def scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return scrub_record(made_by(*args, **kwargs))

        logging.setLogRecordFactory(scrubbed_record)
        _installed = scrubbed_record


def installed() -> bool:
    """Whether this process scrubs its records as they are made."""
    return _installed is not None and logging.getLogRecordFactory() is _installed
