"""What is wrong with a message, read before Celery acts on it, and the refusal that says so.

Pure functions of a kombu message (or an envelope's headers): no broker, no result backend. Every
:class:`Refusal` is built by :func:`refusal`, the one reader of what a message's headers say of it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from numbers import Real
from typing import Any

from celery.utils.time import maybe_iso8601

from aipool.contract.vocabulary import ErrorCode

log = logging.getLogger("aipool.edge")

#: Deepest nesting of lists and objects a message body may have. The worker's parent pickles the
#: arguments for its pool child, and pickling recurses once per level: a few hundred levels exhaust
#: the parent's stack. Real requests (messages, tools with JSON Schema parameters) stay far below.
MAX_DEPTH = 100

#: Longest task id accepted; Celery's own ids are 36 characters.
MAX_TASK_ID = 255

_TEXT_ENCODINGS = frozenset({"utf-8", "utf8"})
_OPTIONAL_TEXT_HEADERS = ("shadow", "root_id", "parent_id", "group", "argsrepr", "kwargsrepr")
_TIME_HEADERS = ("eta", "expires")
_EMBED_LISTS = ("callbacks", "errbacks", "chain")


@dataclass(frozen=True)
class Refusal:
    """Why a message was refused, and what is known of it without reading its body."""

    code: ErrorCode
    reason: str
    task_id: str | None = None
    queue: str | None = None
    task_name: str | None = None


def refusal(
    code: ErrorCode,
    reason: str,
    headers: Any = None,
    *,
    properties: Any = None,
    queue: Any = None,
) -> Refusal:
    """The refusal of a message: ``code`` and ``reason`` with what its headers tell of it.

    The one place a refused message's task id, task name and queue are read. Any of them may be
    anything a producer wrote; what is not a plausible value is left out rather than trusted.
    """
    headers = headers if isinstance(headers, dict) else {}
    properties = properties if isinstance(properties, dict) else {}
    name = headers.get("task")
    return Refusal(
        code,
        reason,
        task_id=_task_id(headers.get("id")) or _task_id(properties.get("correlation_id")),
        queue=queue if isinstance(queue, str) else None,
        task_name=name if isinstance(name, str) else None,
    )


def refusal_of(message: Any, code: ErrorCode, reason: str) -> Refusal:
    """:func:`refusal` for a kombu message (or anything with its attributes)."""
    delivery_info = getattr(message, "delivery_info", None)
    delivery_info = delivery_info if isinstance(delivery_info, dict) else {}
    return refusal(
        code,
        reason,
        getattr(message, "headers", None),
        properties=getattr(message, "properties", None),
        queue=delivery_info.get("routing_key"),
    )


def log_refusal(refusal: Refusal, answered: str = "not answered") -> None:
    """Log a refused message on one line: task id, task, queue, code, reason; never the body."""
    reason = refusal.reason if refusal.reason.isprintable() else repr(refusal.reason)
    log.warning(
        "refused message %s (task %s) on queue %s: %s: %s; %s",
        refusal.task_id or "without task id",
        shown(refusal.task_name) if refusal.task_name else "unknown",
        shown(refusal.queue) if refusal.queue else "unknown",
        refusal.code,
        reason,
        answered,
    )


def shown(value: Any, limit: int = 60) -> str:
    # A plain name is shown as it is; anything else as its repr, which escapes newlines, so a
    # refusal always logs as one line whatever a header holds.
    if isinstance(value, str) and value.isprintable() and " " not in value and len(value) <= limit:
        return value
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _task_id(value: Any) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= MAX_TASK_ID and value.isprintable():
        return value
    return None


def _deeper_than(value: Any, limit: int) -> bool:
    # Iterative on purpose: a recursive walk would fail on exactly the messages it looks for.
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _from_recursion(exc: BaseException | None) -> bool:
    # kombu wraps the JSON decoder's RecursionError in its DecodeError.
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, RecursionError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def _header_problem(headers: dict[str, Any]) -> str | None:
    """What is wrong with the headers Celery reads in the worker's parent, if anything."""
    for name in _OPTIONAL_TEXT_HEADERS:
        value = headers.get(name)
        if value is not None and not isinstance(value, str):
            return f"header {name} is not a string"
    for name in _TIME_HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            return f"header {name} is not an ISO 8601 time"
        try:
            maybe_iso8601(value)
        except (ValueError, TypeError, AttributeError, OverflowError):
            return f"header {name} is not an ISO 8601 time"
    timelimit = headers.get("timelimit")
    if timelimit is not None and not (
        isinstance(timelimit, list | tuple)
        and len(timelimit) == 2
        and all(limit is None or _is_number(limit) for limit in timelimit)
    ):
        return "header timelimit is not [soft, hard]"
    for name in ("retries", "replaced_task_nesting", "group_index"):
        value = headers.get(name)
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool)):
            return f"header {name} is not an integer"
    ignore_result = headers.get("ignore_result")
    if ignore_result is not None and not isinstance(ignore_result, bool):
        return "header ignore_result is not a boolean"
    stamped = headers.get("stamped_headers")
    if stamped is not None and not (
        isinstance(stamped, list) and all(isinstance(s, str) for s in stamped)
    ):
        return "header stamped_headers is not a list of names"
    stamps = headers.get("stamps")
    if stamps is not None and not isinstance(stamps, dict):
        return "header stamps is not an object"
    return None


def _body_problem(body: Any) -> str | None:
    """What is wrong with a decoded protocol 2 body ``[args, kwargs, embed]``, if anything."""
    if not isinstance(body, list | tuple) or len(body) != 3:
        return "body is not [args, kwargs, embed]"
    args, kwargs, embed = body
    if not isinstance(args, list | tuple):
        return "args are not a list"
    if not isinstance(kwargs, dict):
        return "kwargs are not an object"
    if embed is not None:
        if not isinstance(embed, dict):
            return "embed is not an object"
        for name in _EMBED_LISTS:
            value = embed.get(name)
            if value is not None and not isinstance(value, list):
                return f"embed {name} is not a list"
        chord = embed.get("chord")
        if chord is not None and not isinstance(chord, dict):
            return "embed chord is not an object"
    return None


def inspect_message(message: Any, tasks: dict[str, Any], accept: set[str] | None) -> Refusal | None:
    """The reason to refuse ``message`` (a kombu message), or None when Celery may take it.

    ``tasks`` maps the registered task names to their tasks; ``accept`` holds the accepted content
    types (None: any, as kombu reads it). Reading the body here costs nothing extra: kombu caches the decoded payload, and Celery
    decodes it in the same process right after.
    """
    raw_headers = message.headers
    headers: dict[str, Any] = raw_headers if isinstance(raw_headers, dict) else {}
    properties = message.properties if isinstance(message.properties, dict) else {}
    name = headers.get("task") if isinstance(headers.get("task"), str) else None

    def refuse(code: ErrorCode, reason: str) -> Refusal:
        return refusal_of(message, code, reason)

    if not isinstance(raw_headers, dict):
        return refuse("malformed_message", "headers are not an object")
    if accept is not None and message.content_type not in accept:
        return refuse(
            "content_type_refused",
            f"content type {shown(message.content_type)} refused; send application/json",
        )
    encoding = message.content_encoding
    if not isinstance(encoding, str) or encoding.lower() not in _TEXT_ENCODINGS:
        return refuse(
            "content_type_refused", f"content encoding {shown(encoding)} refused; send utf-8"
        )
    if "task" not in headers:
        return refuse("malformed_message", "not a Celery protocol 2 message (no task header)")
    if name is None:
        return refuse("malformed_message", "task name is not a string")
    if "id" not in headers:
        return refuse("malformed_message", "no task id header")
    if _task_id(headers["id"]) is None:
        return refuse(
            "malformed_message", "task id is not a printable string of 1 to 255 characters"
        )
    task = tasks.get(name)
    if task is None:
        return refuse("unknown_task", f"no task named {shown(name)} in this pool")
    problem = _header_problem(headers)
    if problem:
        return refuse("malformed_message", problem)
    # Headers and properties travel to the pool child with the arguments, pickled the same way.
    if _deeper_than(headers, MAX_DEPTH) or _deeper_than(properties, MAX_DEPTH):
        return refuse("too_deep", f"headers or properties nest deeper than {MAX_DEPTH} levels")
    try:
        body = message.payload
    except Exception as exc:  # every decoding failure means the same thing: not readable JSON
        if _from_recursion(exc):
            return refuse("too_deep", f"body nests deeper than {MAX_DEPTH} levels")
        return refuse("malformed_message", f"body is not JSON text ({type(exc).__name__})")
    problem = _body_problem(body)
    if problem:
        return refuse("malformed_message", problem)
    if _deeper_than(body, MAX_DEPTH):
        return refuse("too_deep", f"body nests deeper than {MAX_DEPTH} levels")
    signature = getattr(task, "__header__", None)
    if signature is not None:
        args, kwargs, _ = body
        try:
            signature(*args, **kwargs)
        except TypeError as exc:
            return refuse("bad_arguments", f"arguments do not fit {name}: {exc}")
    return None
