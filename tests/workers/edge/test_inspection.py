"""The edge check: which messages a worker refuses before Celery acts on them, and why.

Fast tests over kombu messages built in the test; ``tests/reliability/test_poison_messages.py``
sends the same kinds through real workers.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import pytest
from celery import Celery
from kombu.message import Message
from kombu.serialization import dumps

from tests.support.kombu_message import kombu_message as _message
from workers.edge.inspection import MAX_DEPTH, Refusal, inspect_message, log_refusal

ACCEPT = {"application/json"}
SECRET = "the prompt nobody may read"

app = Celery("edge-test", set_as_current=False)


@app.task(name="edge.add", shared=False)
def add(x: int, y: int) -> int:
    return x + y


@app.task(name="edge.tidy", shared=False, ignore_result=True)
def tidy(batch: int = 500) -> int:
    return batch


def _nested(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def _celery_message(name: str = "edge.add", args: Any = (1, 2), **options: Any) -> Message:
    """The message Celery's own producer builds for ``name``."""
    task_id = str(uuid.uuid4())
    sent = app.amqp.as_task_v2(task_id, name, args=args, kwargs={}, **options)
    content_type, encoding, body = dumps(sent.body, serializer="json")
    return Message(
        body=body.encode(),
        content_type=content_type,
        content_encoding=encoding,
        headers=sent.headers,
        properties={**sent.properties, "correlation_id": task_id},
        delivery_info={"exchange": "", "routing_key": "router"},
    )


def _inspect(message: Message) -> Refusal | None:
    return inspect_message(message, app.tasks, ACCEPT)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"countdown": 5, "expires": 60},
        {"time_limit": 30, "soft_time_limit": 20, "ignore_result": True},
        {"replaced_task_nesting": 2, "root_id": "root", "parent_id": "parent"},
        {"group_id": "g", "group_index": 0, "shadow": "edge.add:shadowed"},
    ],
)
def test_a_message_celery_sends_passes(options: dict[str, Any]) -> None:
    # Given a message built by Celery's own producer, with the options a hop or beat may set
    message = _celery_message(**options)
    # When the edge looks at it, Then it lets it through to Celery
    assert _inspect(message) is None


def test_arguments_nested_up_to_the_limit_pass_and_one_level_more_is_too_deep() -> None:
    # Given bodies [args, kwargs, embed] whose deepest point sits exactly at, and one past, the limit
    # (the body is level 1, args level 2, so the first argument's lists start at level 3)
    at_limit = _celery_message(args=[_nested(MAX_DEPTH - 2), 1])
    past_limit = _celery_message(args=[_nested(MAX_DEPTH - 1), 1])
    # Then the first passes and the second is refused as too deep
    assert _inspect(at_limit) is None
    refusal = _inspect(past_limit)
    assert refusal is not None and refusal.code == "too_deep"


@pytest.mark.parametrize(
    ("body", "code", "reason"),
    [
        (json.dumps({"request": {"prompt": SECRET}}), "malformed_message", "body is not [args"),
        ("null", "malformed_message", "body is not [args"),
        ('[[1, 2], {}, {}, "extra"]', "malformed_message", "body is not [args"),
        ('["1, 2", {}, {}]', "malformed_message", "args are not a list"),
        ("[[1, 2], [], {}]", "malformed_message", "kwargs are not an object"),
        ('[[1, 2], {}, "callbacks"]', "malformed_message", "embed is not an object"),
        ('[[1, 2], {}, {"chain": "edge.add"}]', "malformed_message", "embed chain is not a list"),
        (f"not json {SECRET}", "malformed_message", "body is not JSON text"),
        (b"\xff\xfe[]", "malformed_message", "body is not JSON text"),
        ("[" * 600 + "]" * 600, "malformed_message", "body is not [args"),
        (json.dumps([[_nested(600)], {}, {}]), "too_deep", "deeper than 100"),
        ("[" * 5000 + "]" * 5000, "too_deep", "deeper than 100"),
        ('[["x"], {}, {}]', "bad_arguments", "arguments do not fit edge.add"),
        ('[[1, 2], {"z": 3}, {}]', "bad_arguments", "unexpected keyword argument"),
    ],
)
def test_a_body_celery_cannot_unpack_or_call_with_is_refused(
    body: str | bytes, code: str, reason: str
) -> None:
    # Given a message for a known task whose body is not [args, kwargs, embed] fitting the task
    headers = {"task": "edge.add", "id": "id-1"}
    # When the edge looks at it
    refusal = _inspect(_message(body, headers))
    # Then it is refused with the code and a reason that names the problem, not the body
    assert refusal is not None
    assert (refusal.code, refusal.task_id, refusal.task_name) == (code, "id-1", "edge.add")
    assert reason in refusal.reason
    assert SECRET not in refusal.reason
    assert refusal.queue == "gemini"


@pytest.mark.parametrize(
    ("content_type", "encoding"),
    [
        ("application/x-python-serialize", "binary"),
        ("application/x-yaml", "utf-8"),
        ("text/plain", "utf-8"),
        (None, "utf-8"),
        ("application/json", "zlib_codec"),
        ("application/json", None),
    ],
)
def test_a_foreign_content_type_or_encoding_is_refused_before_the_body_is_read(
    content_type: str | None, encoding: str | None
) -> None:
    # Given a message whose body would be decoded by something other than JSON over UTF-8
    message = _message(b"\x80\x04K\x01.", content_type=content_type, encoding=encoding)  # type: ignore[arg-type]
    # When the edge looks at it, Then it refuses the content type without decoding anything
    refusal = _inspect(message)
    assert refusal is not None and refusal.code == "content_type_refused"
    assert message._decoded_cache is None


def test_headers_or_properties_nested_past_the_limit_are_too_deep() -> None:
    # Given messages whose headers, or whose properties, nest one level past the limit
    deep_headers = _message("[[1, 2], {}, {}]", {"task": "edge.add", "id": "i", "x": _nested(100)})
    deep_properties = _message("[[1, 2], {}, {}]")
    deep_properties.properties["x"] = _nested(100)
    # Then both are refused as too deep: they would be pickled for the pool child too
    for message in (deep_headers, deep_properties):
        refusal = _inspect(message)
        assert refusal is not None and refusal.code == "too_deep"


def test_an_unknown_task_name_is_refused_with_its_task_id() -> None:
    # Given a message for a task this pool does not have
    message = _message("[[], {}, {}]", {"task": "billing.charge", "id": "id-2"})
    # Then it is refused as an unknown task, carrying the id the producer holds
    refusal = _inspect(message)
    assert refusal is not None
    assert (refusal.code, refusal.task_id, refusal.task_name) == (
        "unknown_task",
        "id-2",
        "billing.charge",
    )


@pytest.mark.parametrize(
    ("headers", "correlation_id", "reason", "task_id"),
    [
        ({}, "from-properties", "no task header", "from-properties"),
        (["edge.add", "id-3"], None, "headers are not an object", None),
        ({"task": 7, "id": "id-3"}, None, "task name is not a string", "id-3"),
        ({"task": "edge.add"}, "from-properties", "no task id header", "from-properties"),
        ({"task": "edge.add", "id": 42}, None, "task id is not a printable string", None),
        ({"task": "edge.add", "id": "a\nb"}, None, "task id is not a printable string", None),
        ({"task": "edge.add", "id": "i", "eta": "tomorrow"}, None, "eta is not", "i"),
        ({"task": "edge.add", "id": "i", "expires": 60}, None, "expires is not", "i"),
        ({"task": "edge.add", "id": "i", "timelimit": "30"}, None, "timelimit", "i"),
        ({"task": "edge.add", "id": "i", "timelimit": [1, 2, 3]}, None, "timelimit", "i"),
        ({"task": "edge.add", "id": "i", "retries": "0"}, None, "retries", "i"),
        ({"task": "edge.add", "id": "i", "shadow": ["x"]}, None, "shadow", "i"),
        ({"task": "edge.add", "id": "i", "ignore_result": "no"}, None, "ignore_result", "i"),
        ({"task": "edge.add", "id": "i", "stamped_headers": "on"}, None, "stamped_headers", "i"),
    ],
)
def test_headers_celery_would_choke_on_are_refused(
    headers: Any, correlation_id: str | None, reason: str, task_id: str | None
) -> None:
    # Given a message whose headers are missing, of the wrong type, or hold values Celery cannot use
    message = _message("[[1, 2], {}, {}]", {}, correlation_id=correlation_id)
    message.headers = headers  # kombu's own Message refuses to be built with headers not a dict
    # Then it is refused as malformed, answered under whichever task id the message carries
    refusal = _inspect(message)
    assert refusal is not None and refusal.code == "malformed_message"
    assert reason in refusal.reason
    assert refusal.task_id == task_id


def test_a_refusal_is_one_log_line_without_the_body(caplog: pytest.LogCaptureFixture) -> None:
    # Given a refusal whose task name and reason carry line breaks
    refusal = Refusal(
        "unknown_task", "no task named 'a\nb'", task_id="id-4", queue="router", task_name="a\nb"
    )
    # When it is logged
    with caplog.at_level(logging.WARNING, logger="aipool.edge"):
        log_refusal(refusal, "answered")
    # Then one line names the id, queue and code
    (record,) = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    assert "id-4" in line and "router" in line and "unknown_task" in line and "answered" in line
