"""The worker's edge: every message is checked before Celery acts on it, so no message kills a worker.

Celery trusts what arrives on a queue. A protocol 2 body that is not ``[args, kwargs, embed]`` (a
dict, ``null``) fails to unpack in ``Request.__init__``; arguments, headers or properties nested a
few hundred levels deep make the parent's pickling for the pool child raise ``RecursionError``; on
the Redis transport an envelope that is not JSON fails in ``Channel._brpop_read``. All of these run
in the worker's parent, inside the event loop, so the exception ends the worker; with late acks and
``task_reject_on_worker_lost`` the message goes back on the queue and kills every replacement too.
An envelope without ``properties`` raises a KeyError while kombu builds its ``Message``, which the
Redis transport counts as a lost connection: the consumer reconnects and the message is gone. What
Celery does catch it answers badly for this pool: an unknown task name is stored as a
``NotRegistered`` FAILURE, a refused content type, a body too deep to decode or a bad ETA is never
answered, and those paths log the message body (``dump_body``), which holds the prompt.

Where the check sits, and why there:

* :class:`EdgeConsumer`, the worker's consumer class (the documented ``worker_consumer`` setting),
  wraps the handler that ``Consumer.create_task_handler`` builds. That handler is the one function
  every task message passes through, on every broker, before Celery reads its headers, picks a
  strategy or builds a ``Request``. A consumer bootstep could only patch the consumer instance
  (the event loop builds the handler itself, as the last step starts); a custom ``Task.Strategy``
  or ``Task.Request`` and a wrapper around ``consumer.strategies`` only see messages whose headers
  are a dict and whose task name is registered, and they are per task (the maintenance tasks
  would need the same base).
* :class:`RedisTransport` is kombu's Redis transport with one change in its channel: the envelope
  (the JSON document LPUSHed onto the list) is decoded and checked before kombu builds a message
  from it, on the BRPOP path a worker consumes by. This is the only failure that happens before
  any consumer code runs, and it exists only on Redis: an AMQP broker delivers frames that py-amqp
  has already parsed. ``workers.app`` selects it for ``redis://`` and ``rediss://`` brokers
  (``broker_transport``).

A refused message is rejected without requeue (so it leaves the queue and, on Redis, the unacked
set), logged once on one line with its task id, queue and reason and never its body, and, when it
carries a task id and its task keeps results, answered in the result backend with a contract error
result in state SUCCESS: the producer's ``AsyncResult.get()`` returns ``status: "error"`` instead of
waiting forever. A message that passes every check and still makes Celery raise is refused the same
way. Codes: ``malformed_message``, ``unknown_task``, ``content_type_refused``, ``too_deep`` (the
contract's own code for nesting), ``bad_arguments``.

The embedded broker (``redis+socket://``, the demo's) is named by a URL prefix that kombu resolves
to its own transport whatever ``broker_transport`` says, so there only the consumer check applies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real
from typing import Any

from celery import states
from celery.utils.time import maybe_iso8601
from celery.worker.consumer import Consumer
from kombu.serialization import prepare_accept_content
from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

from aipool import result

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

    code: str
    reason: str
    task_id: str | None = None
    queue: str | None = None
    task_name: str | None = None


def log_refusal(refusal: Refusal, answered: str = "not answered") -> None:
    """Log a refused message on one line: task id, task, queue, code, reason; never the body."""
    reason = refusal.reason if refusal.reason.isprintable() else repr(refusal.reason)
    log.warning(
        "refused message %s (task %s) on queue %s: %s: %s; %s",
        refusal.task_id or "without task id",
        _shown(refusal.task_name) if refusal.task_name else "unknown",
        _shown(refusal.queue) if refusal.queue else "unknown",
        refusal.code,
        reason,
        answered,
    )


def _shown(value: Any, limit: int = 60) -> str:
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


def inspect_message(message: Any, tasks: dict[str, Any], accept: set[str]) -> Refusal | None:
    """The reason to refuse ``message`` (a kombu message), or None when Celery may take it.

    ``tasks`` maps the registered task names to their tasks; ``accept`` holds the accepted content
    types. Reading the body here costs nothing extra: kombu caches the decoded payload, and Celery
    decodes it in the same process right after.
    """
    raw_headers = message.headers
    headers: dict[str, Any] = raw_headers if isinstance(raw_headers, dict) else {}
    properties = message.properties if isinstance(message.properties, dict) else {}
    delivery_info = message.delivery_info if isinstance(message.delivery_info, dict) else {}
    routing_key = delivery_info.get("routing_key")
    queue = routing_key if isinstance(routing_key, str) else None
    task_id = _task_id(headers.get("id")) or _task_id(properties.get("correlation_id"))
    raw_name = headers.get("task")
    name = raw_name if isinstance(raw_name, str) else None

    def refuse(code: str, reason: str) -> Refusal:
        return Refusal(code, reason, task_id=task_id, queue=queue, task_name=name)

    if not isinstance(raw_headers, dict):
        return refuse("malformed_message", "headers are not an object")
    if message.content_type not in accept:
        return refuse(
            "content_type_refused",
            f"content type {_shown(message.content_type)} refused; send application/json",
        )
    encoding = message.content_encoding
    if not isinstance(encoding, str) or encoding.lower() not in _TEXT_ENCODINGS:
        return refuse(
            "content_type_refused", f"content encoding {_shown(encoding)} refused; send utf-8"
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
        return refuse("unknown_task", f"no task named {_shown(name)} in this pool")
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


#: What task events, Flower and logs show of a request's arguments when its producer did not say.
WITHHELD = "{'request': '<withheld>'}"


def withhold_prompt(message: Any) -> None:
    """Keep the prompt out of Flower, task events and logs, whoever produced the message.

    A plain ``send_task`` puts ``saferepr(kwargs)`` (the prompt) into the ``kwargsrepr`` header,
    which Celery copies into the task-received event and its log record. Messages the pool sends
    carry a description of the hop instead (``tasks.generate.describe``) and are kept as they are.
    """
    headers = message.headers
    if headers.get("task") != "ai.generate":
        return
    shown = headers.get("kwargsrepr")
    if not (isinstance(shown, str) and shown.startswith("{'intent': ")):
        headers["kwargsrepr"] = WITHHELD
    headers["argsrepr"] = "()"


def guarded(
    handle: Callable[[Any], Any],
    inspect: Callable[[Any], Refusal | None],
    refuse: Callable[[Refusal, Any], None],
    connection_errors: tuple[type[BaseException], ...],
) -> Callable[[Any], Any]:
    """Celery's task message handler ``handle`` with the edge in front of it.

    A message ``inspect`` finds fault with is refused and never reaches ``handle``. One that passes
    and still makes ``handle`` raise is refused too, unless Celery already acknowledged it or the
    error is the connection's own (``connection_errors``: re-raised, so Celery reconnects and the
    broker redelivers it).
    """

    def on_task_received(message: Any) -> Any:
        refusal = inspect(message)
        if refusal is not None:
            refuse(refusal, message)
            return None
        withhold_prompt(message)
        try:
            return handle(message)
        except connection_errors:
            raise
        except Exception as exc:
            headers = message.headers
            if message.acknowledged:
                log.error(
                    "message %s failed after it was handed on (%s)",
                    _shown(headers.get("id")),
                    type(exc).__name__,
                )
                return None
            routing_key = (message.delivery_info or {}).get("routing_key")
            refuse(
                Refusal(
                    "malformed_message",
                    f"the worker could not take this message ({type(exc).__name__})",
                    task_id=_task_id(headers.get("id")),
                    queue=routing_key if isinstance(routing_key, str) else None,
                    task_name=headers.get("task"),
                ),
                message,
            )
            return None

    return on_task_received


class EdgeConsumer(Consumer):
    """Celery's consumer with the edge check in front of its task message handler.

    Selected with ``worker_consumer`` in ``workers.app``.
    """

    def create_task_handler(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        # Exactly the tasks Celery would dispatch: those it built a strategy for.
        known = {name: self.app.tasks[name] for name in self.strategies if name in self.app.tasks}
        accept = prepare_accept_content(self.app.conf.accept_content)
        # kombu counts KeyError among the Redis transport's connection errors; raised by Celery
        # while it takes a message, it is the message's fault, not the connection's.
        connection_errors = tuple(
            error for error in self.connection_errors + self.channel_errors if error is not KeyError
        )
        return guarded(
            super().create_task_handler(*args, **kwargs),
            lambda message: inspect_message(message, known, accept),
            self.refuse,
            connection_errors,
        )

    def on_decode_error(self, message: Any, exc: Exception) -> None:
        """A message kombu could not even build (bad compression, bad text): refuse it quietly.

        Celery's own handler logs the body.
        """
        headers = getattr(message, "headers", None)
        headers = headers if isinstance(headers, dict) else {}
        delivery_info = getattr(message, "delivery_info", None) or {}
        self.refuse(
            Refusal(
                "malformed_message",
                f"message could not be decoded ({type(exc).__name__})",
                task_id=_task_id(headers.get("id")),
                queue=delivery_info.get("routing_key"),
                task_name=headers.get("task") if isinstance(headers.get("task"), str) else None,
            ),
            message,
        )

    def connect(self) -> Any:
        connection = super().connect()
        transport = connection.transport
        if isinstance(transport, RedisTransport):
            # Envelopes the channel drops are answered here, where the result backend is known.
            transport.on_refused = self.refuse
        return connection

    def refuse(self, refusal: Refusal, message: Any = None) -> None:
        """Answer the producer (when it can wait for one), reject ``message``, log one line."""
        answered = "not answered"
        if refusal.task_id is not None and self._keeps_result(refusal, message):
            payload = result.error(refusal.task_id, refusal.code, refusal.reason)
            try:
                self.app.backend.store_result(refusal.task_id, payload, states.SUCCESS)
                answered = "answered"
            except Exception as exc:
                answered = f"answer not stored ({type(exc).__name__})"
        if message is not None:
            reject = getattr(message, "reject_log_error", None)
            if reject is not None:
                reject(log, self.connection_errors, requeue=False)
        log_refusal(refusal, answered)

    def _keeps_result(self, refusal: Refusal, message: Any) -> bool:
        # As Celery would store it: the message's ignore_result first, then the task's setting.
        # Nobody waits on a maintenance task (ignore_result), so nothing is stored for one.
        headers = getattr(message, "headers", None)
        if isinstance(headers, dict) and isinstance(headers.get("ignore_result"), bool):
            return not headers["ignore_result"]
        task = self.app.tasks.get(refusal.task_name) if refusal.task_name else None
        return task is None or not task.ignore_result


class RedisChannel(kombu_redis.Channel):
    """kombu's Redis channel, checking each envelope before a message is built from it."""

    def _brpop_read(self, **options: Any) -> bool:
        # kombu 5.7's _brpop_read with the envelope check in place of its bare ``loads``.
        try:
            try:
                dest__item = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:
                self.client.connection.disconnect()
                raise
            if not dest__item:
                raise kombu_redis.Empty()
            dest, item = dest__item
            dest = bytes_to_str(dest).rsplit(self.sep, 1)[0]
            self._queue_cycle.rotate(dest)
            envelope = self._checked_envelope(item, dest)
            if envelope is None:
                raise kombu_redis.Empty()
            self.connection._deliver(envelope, dest)
            return True
        finally:
            self._in_poll = None  # type: ignore[assignment]  # as kombu's own _brpop_read does
            self._flush_brpop_reauth()

    def _checked_envelope(self, item: bytes, queue: str) -> dict[str, Any] | None:
        """The envelope ``item`` decoded, or None (and the refusal reported) if kombu cannot use it.

        The item is already off the list and not yet in the unacked set: dropping it here removes
        it for good.
        """
        try:
            envelope = loads(bytes_to_str(item))
        except (ValueError, RecursionError):
            self.connection.on_refused(
                Refusal("malformed_message", "envelope is not JSON", queue=queue)
            )
            return None
        problem = self._envelope_problem(envelope)
        if problem is None:
            return envelope
        headers = envelope.get("headers") if isinstance(envelope, dict) else None
        headers = headers if isinstance(headers, dict) else {}
        name = headers.get("task")
        self.connection.on_refused(
            Refusal(
                "malformed_message",
                problem,
                task_id=_task_id(headers.get("id")),
                queue=queue,
                task_name=name if isinstance(name, str) else None,
            )
        )
        return None

    def _envelope_problem(self, envelope: Any) -> str | None:
        if not isinstance(envelope, dict):
            return "envelope is not a JSON object"
        properties = envelope.get("properties")
        if not isinstance(properties, dict):
            return "envelope has no properties object"
        if not isinstance(properties.get("delivery_tag"), str):
            return "envelope has no delivery tag"
        delivery_info = properties.get("delivery_info")
        # The unacked set records (exchange, routing key) to give a message back later.
        if not (
            isinstance(delivery_info, dict)
            and isinstance(delivery_info.get("exchange"), str)
            and isinstance(delivery_info.get("routing_key"), str)
        ):
            return "envelope has no delivery_info with exchange and routing_key"
        headers = envelope.get("headers")
        if headers is not None and not isinstance(headers, dict):
            return "envelope headers are not an object"
        if headers and headers.get("compression") is not None:
            # Decompressing happens while the message is built, before any check could bound it.
            return "compressed messages are refused"
        try:
            self.Message(envelope, channel=self)
        except Exception as exc:
            return f"envelope body cannot be read ({type(exc).__name__})"
        return None


class RedisTransport(kombu_redis.Transport):
    """kombu's Redis transport with :class:`RedisChannel`."""

    Channel = RedisChannel

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Called with each envelope the channel drops. It only logs; the worker's consumer
        #: replaces it with one that also answers the producer.
        self.on_refused: Callable[[Refusal], None] = log_refusal
