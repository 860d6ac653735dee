"""``aipool submit``: one request through the pool, checked before it is sent.

The request is validated here; the command asks the workers (for about a second) which queues
they consume, then routes the request (its ``latency_ms`` starts there, so it does not include
that second) and says how to start a worker if none consumes the queue it goes to. The message
expires with ``--timeout``, so a request nobody answered in time is not answered minutes later by a
worker that starts afterwards; a worker that has it when it expires cuts its call there and the
chain's end answers, which the command waits for a moment longer (:data:`ANSWER_GRACE_S`).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from aipool.cli.console import console
from aipool.cli.pool import redis_url
from aipool.contract.request import parse_request
from aipool.errors import NoAnswer, NoWorker
from aipool.views.pool_location import describe_redis

#: Result statuses that count as the pool doing its job (``error`` does not).
ANSWERED = ("ok", "fallback", "refused")


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"
    critical = "critical"


#: How long past ``--timeout`` the command still waits for an answer: a worker that holds the
#: request when it expires cuts its call there and the chain's end answers (its static answer or
#: refusal, with each provider's reason), a round trip or two after the expiry. Without the wait
#: the command raced that answer and said it had none.
ANSWER_GRACE_S = 2.0

#: The longest ``--timeout``: a day. The message's expiry is a date, so an unbounded wait
#: (inf, 1e308) cannot be one.
MAX_TIMEOUT_S = 86_400.0


def _positive(value: float) -> float:
    if not value > 0:  # NaN too
        raise typer.BadParameter(f"must be more than 0 seconds, not {value:g}")
    if value > MAX_TIMEOUT_S:
        raise typer.BadParameter(
            f"must be at most {MAX_TIMEOUT_S:g} seconds (a day), not {value:g}"
        )
    return value


def _tools(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise typer.BadParameter(
            f"cannot read {path}: {exc.strerror}", param_hint="--tools-file"
        ) from None
    except ValueError as exc:
        raise typer.BadParameter(f"{path} is not JSON: {exc}", param_hint="--tools-file") from None


def _prompt(text: str) -> str:
    """``text``, or with ``-`` the whole of standard input: a prompt held in a file (a pasted log
    with quotes and newlines, awkward to quote as one argument, or one near the operating
    system's limit for an argument, 128 KiB on Linux)."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise typer.BadParameter(
            f"standard input is not UTF-8 text (byte {exc.start} of {len(data)})",
            param_hint="TEXT",
        ) from None


def require_worker(queue: str, consumed: set[str], where: str) -> None:
    """Raise :class:`NoWorker`, saying how to start one, unless ``queue`` is among the
    ``consumed`` ones (:func:`aipool.metrics.pool_state.queue_consumers`)."""
    if queue in consumed:
        return
    from aipool.lanes import QUEUES

    raise NoWorker(
        f"no worker consumes queue {queue!r} on {where}: start the pool's workers with "
        f"`aipool worker`, or one on every queue and lane: "
        f"`celery -A workers.app worker -Q {','.join(QUEUES)}`"
    )


def submit(
    text: Annotated[
        str, typer.Argument(help="The prompt; - reads it from standard input.", show_default=False)
    ],
    tools_file: Annotated[
        Path | None,
        typer.Option(help="JSON file with a list of tools (name, description, parameters)."),
    ] = None,
    intent: Annotated[str | None, typer.Option(help="Override the intent classifier.")] = None,
    priority: Annotated[Priority, typer.Option(help="How urgent the request is.")] = (
        Priority.normal
    ),
    timeout: Annotated[
        float,
        typer.Option(callback=_positive, help="Seconds to wait for the answer; then it expires."),
    ] = 60.0,
    user_id: Annotated[str, typer.Option(help="Recorded in the ledger.")] = "cli",
) -> None:
    """Send one request through the pool and print the result as JSON."""

    request: dict[str, Any] = {
        "prompt": _prompt(text),
        "priority": str(priority),
        "user_id": user_id,
    }
    if intent:
        request["intent"] = intent
    if tools_file:
        request["tools"] = _tools(tools_file)
    parse_request(request)  # a malformed request is the user's mistake: said before any Redis

    from celery.exceptions import TimeoutError as CeleryTimeout

    where = describe_redis(redis_url())
    # deferred: `aipool` imports every command at start; only this one loads celery, kombu, prometheus-client (~280 ms)
    from aipool.metrics.pool_state import queue_consumers
    from tasks.client import route, send
    from workers.app import app

    # Asked before routing: the request's clock (latency_ms, deadline_s) starts when it is routed,
    # and the workers take about a second to answer.
    consumed = set(queue_consumers(app))
    dispatch = route(request)
    require_worker(dispatch.queue, consumed, where)
    result = send(dispatch, app=app, expires=timeout)
    try:
        answer = result.get(timeout=timeout + ANSWER_GRACE_S)
    except CeleryTimeout:
        answer = None
    if answer is None:
        # Stop listening for its result now: left to the interpreter's exit, the result's
        # __del__ unsubscribes while Python is shutting down, and prints 17 lines of traceback.
        result.backend.remove_pending_result(result)  # type: ignore[attr-defined]  # the async backend's, not in celery-types' Backend
        result.backend = None  # type: ignore[assignment]  # dropped on purpose: nothing listens after this
        raise NoAnswer(
            f"no answer within {timeout:g} s for request {dispatch.task_id} (sent to queue "
            f"{dispatch.queue!r} on {where}); it has expired: a worker that had not taken it yet "
            "never will, and no worker that held it answered (a stalled pool: see `aipool status`)"
        ) from None
    console().print_json(json.dumps(answer, ensure_ascii=False))
    if answer.get("status") not in ANSWERED:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(submit)
