"""The consumer's handler wrapper: a refused message never reaches Celery, and nothing Celery raises
on a message ends the worker."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kombu.message import Message

from tests.support.kombu_message import kombu_message as _message
from workers.edge.consumer import guarded
from workers.edge.inspection import Refusal


class _Refusals(list):  # type: ignore[type-arg]
    def __call__(self, refusal: Refusal, message: Any) -> None:
        self.append((refusal, message))


def _raising(exc: BaseException) -> Any:
    def handle(message: Message) -> None:
        raise exc

    return handle


def test_a_message_the_check_refuses_never_reaches_celery() -> None:
    # Given a check that refuses every message, in front of Celery's handler
    handled: list[Message] = []
    refused = _Refusals()
    refusal = Refusal("unknown_task", "no task named x", task_id="id-5")
    handler = guarded(handled.append, lambda m: refusal, refused, ())
    # When a message arrives
    message = _message("[[1, 2], {}, {}]")
    handler(message)
    # Then it is refused and Celery never sees it
    assert refused == [(refusal, message)]
    assert handled == []


def test_a_message_celery_still_chokes_on_is_refused_instead_of_ending_the_worker() -> None:
    # Given Celery's handler raising on a message the check let through
    refused = _Refusals()
    handler = guarded(_raising(ValueError("unpack")), lambda m: None, refused, (OSError,))
    message = _message("[[1, 2], {}, {}]", {"task": "edge.add", "id": "id-6"})
    # When it arrives, Then nothing escapes, and it is refused with its task id
    handler(message)
    ((refusal, refused_message),) = refused
    assert (refusal.code, refusal.task_id, refusal.queue) == ("malformed_message", "id-6", "gemini")
    assert "ValueError" in refusal.reason
    assert refused_message is message


def test_a_connection_error_is_left_to_celery_so_the_message_is_redelivered() -> None:
    # Given Celery's handler failing because the broker connection broke
    refused = _Refusals()
    handler = guarded(_raising(ConnectionResetError()), lambda m: None, refused, (OSError,))
    # Then the error reaches Celery (which reconnects) and the message is not refused
    with pytest.raises(ConnectionResetError):
        handler(_message("[[1, 2], {}, {}]"))
    assert refused == []


def test_a_failure_after_celery_acknowledged_the_message_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Given Celery's handler that acknowledged the message, then raised
    refused = _Refusals()
    message = _message("[[1, 2], {}, {}]", {"task": "edge.add", "id": "id-7"})
    message._state = "ACK"
    handler = guarded(_raising(RuntimeError()), lambda m: None, refused, ())
    # Then it is not rejected a second time, and one line says what failed
    with caplog.at_level(logging.ERROR, logger="aipool.edge"):
        handler(message)
    assert refused == []
    assert [r.getMessage() for r in caplog.records] == [
        "message id-7 failed after it was handed on (RuntimeError)"
    ]


def test_a_message_reaches_celery_with_its_eta_on_this_hosts_clock() -> None:
    # Given the edge reading times on this host's clock (here: moving every ETA by a minute)
    seen: list[Any] = []

    def on_time(headers: dict[str, Any]) -> None:
        headers["eta"] = "2026-12-06T10:01:05+00:00"

    handler = guarded(
        lambda message: seen.append(message.headers["eta"]),
        lambda m: None,
        _Refusals(),
        (),
        on_time,
    )
    # When a message with an ETA on the pool's clock arrives
    handler(_message("[[1, 2], {}, {}]", {"task": "edge.add", "id": "i", "eta": "x"}))
    # Then Celery reads the ETA moved onto this host's clock
    assert seen == ["2026-12-06T10:01:05+00:00"]
