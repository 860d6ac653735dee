"""No message can kill a worker: raw poisoned messages pushed straight onto each queue.

Each message is built by hand the way kombu lays one out in Redis (a JSON envelope with a base64
body, LPUSHed onto the queue's list) with one thing wrong: a body Celery cannot unpack, nesting
deeper than a stack, an envelope that is not JSON, a task nobody registered, a foreign content type,
headers that are missing or of the wrong type. For each, the worker lives on, the message is gone
from the queue and from the unacked set, one line is logged with its task id and never its body,
the producer holding its task id gets ``status: "error"`` with a code, and the queue is served
right after. One more test sends poisons over RabbitMQ, where the same consumer check applies.
"""

from __future__ import annotations

import base64
import json
import pickle
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from celery import Celery
from celery.result import AsyncResult
from kombu import Queue

from tests.conftest import TEST_REDIS_URL, worker_env
from tests.support.pool import Worker

pytestmark = pytest.mark.integration

TIMEOUT = 15
SECRET = "payment-api keeps crashing, here is the root password"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672//"


def _headers(task: str, task_id: Any, **extra: Any) -> dict[str, Any]:
    """Protocol 2 headers as Celery 5.7 writes them."""
    return {
        "lang": "py",
        "task": task,
        "id": task_id,
        "shadow": None,
        "eta": None,
        "expires": None,
        "group": None,
        "group_index": None,
        "retries": 0,
        "timelimit": [None, None],
        "root_id": task_id,
        "parent_id": None,
        "argsrepr": "()",
        "kwargsrepr": "{}",
        "origin": "poison@test",
        "ignore_result": None,
        "replaced_task_nesting": 0,
        "stamped_headers": None,
        "stamps": {},
        **extra,
    }


def _envelope(
    body: bytes,
    headers: Any,
    queue: str,
    *,
    content_type: str = "application/json",
    encoding: str = "utf-8",
    correlation_id: str | None = None,
    properties: bool = True,
) -> tuple[str, bytes]:
    """A kombu Redis envelope (what ``LRANGE <queue>`` shows for a real message) and its tag."""
    tag = str(uuid.uuid4())
    envelope: dict[str, Any] = {
        "body": base64.b64encode(body).decode(),
        "content-encoding": encoding,
        "content-type": content_type,
        "headers": headers,
    }
    if properties:
        envelope["properties"] = {
            "correlation_id": correlation_id,
            "reply_to": str(uuid.uuid4()),
            "delivery_mode": 2,
            "delivery_info": {"exchange": "", "routing_key": queue},
            "priority": 0,
            "body_encoding": "base64",
            "delivery_tag": tag,
        }
    return tag, json.dumps(envelope).encode()


def _nested(levels: int) -> Any:
    value: Any = SECRET
    for _ in range(levels):
        value = {"a": value}
    return value


@dataclass(frozen=True)
class Poison:
    """One kind of poisoned message: how to build it for a task id, and what must come of it."""

    queue: str
    build: Callable[[str, str], tuple[str, bytes]]  # (task id, queue) -> (tag, raw envelope)
    code: str | None  # the code the producer reads, None when nobody can be answered
    logged: str  # text of the refusal's log line


def _json(task: str, body: Any, **headers: Any) -> Callable[[str, str], tuple[str, bytes]]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return lambda task_id, queue: _envelope(raw, _headers(task, task_id, **headers), queue)


def _typed(
    content_type: str, encoding: str, body: bytes
) -> Callable[[str, str], tuple[str, bytes]]:
    return lambda task_id, queue: _envelope(
        body,
        _headers("ai.generate", task_id),
        queue,
        content_type=content_type,
        encoding=encoding,
        correlation_id=task_id,
    )


REQUEST = {"request": {"prompt": SECRET}}

POISONS = {
    "body is an object": Poison(
        "router", _json("ai.generate", REQUEST), "malformed_message", "body is not [args"
    ),
    "body is null": Poison(
        "ollama", _json("ai.generate", None), "malformed_message", "body is not [args"
    ),
    "arguments nested 600 deep": Poison(
        "nemotron",
        _json("ai.generate", [[], {"request": _nested(600)}, {}]),
        "too_deep",
        "body nests deeper",
    ),
    "body nested past the JSON decoder": Poison(
        "gemini", _json("ai.generate", b"[" * 5000 + b"]" * 5000), "too_deep", "body nests deeper"
    ),
    "headers nested 500 deep": Poison(
        "router",
        _json("ai.generate", [[], REQUEST, {}], x=_nested(500)),
        "too_deep",
        "headers or properties nest deeper",
    ),
    "compressed body": Poison(
        "ollama",
        _json("ai.generate", b"not zlib at all", compression="application/x-gzip"),
        "malformed_message",
        "compressed messages are refused",
    ),
    "envelope is not JSON": Poison(
        "claude",
        lambda task_id, queue: ("no-tag", f"{task_id} {SECRET}".encode()),
        None,
        "envelope is not JSON",
    ),
    "envelope without properties": Poison(
        "router",
        lambda task_id, queue: _envelope(
            json.dumps([[], REQUEST, {}]).encode(),
            _headers("ai.generate", task_id),
            queue,
            properties=False,
        ),
        "malformed_message",
        "envelope has no properties",
    ),
    "unknown task": Poison(
        "gemini", _json("billing.charge", [[], REQUEST, {}]), "unknown_task", "no task named"
    ),
    "pickle body": Poison(
        "claude",
        _typed("application/x-python-serialize", "binary", pickle.dumps(REQUEST)),
        "content_type_refused",
        "content type",
    ),
    "yaml body": Poison(
        "ollama",
        _typed("application/x-yaml", "utf-8", f"request: {{prompt: {SECRET}}}".encode()),
        "content_type_refused",
        "content type",
    ),
    "text body": Poison(
        "nemotron",
        _typed("text/plain", "utf-8", SECRET.encode()),
        "content_type_refused",
        "content type",
    ),
    "no headers": Poison(
        "router",
        lambda task_id, queue: _envelope(
            json.dumps([[], REQUEST, {}]).encode(), {}, queue, correlation_id=task_id
        ),
        "malformed_message",
        "no task header",
    ),
    "task id is not a string": Poison(
        "gemini",
        lambda task_id, queue: _envelope(
            json.dumps([[], REQUEST, {}]).encode(), _headers("ai.generate", 12345), queue
        ),
        None,
        "task id is not a printable string",
    ),
    "args are not a list": Poison(
        "claude", _json("ai.generate", [SECRET, {}, {}]), "malformed_message", "args are not a list"
    ),
    "kwargs are not an object": Poison(
        "router",
        _json("ai.generate", [[], [SECRET], {}]),
        "malformed_message",
        "kwargs are not an object",
    ),
    "maintenance task with too few arguments": Poison(
        "maintenance",
        _json("aipool.breaker_transition", [["ollama"], {}, {}]),
        None,  # beat and the breaker listener never wait on a maintenance task: nothing is stored
        "arguments do not fit aipool.breaker_transition",
    ),
    "maintenance task with kwargs not an object": Poison(
        "maintenance",
        _json("aipool.drain_ledger", [[], [500], {}]),
        None,
        "kwargs are not an object",
    ),
}


@pytest.fixture()
def worker(celery_app, pool, healthy, clean_redis) -> Iterator[Worker]:  # type: ignore[no-untyped-def]
    """The session's worker, serving every queue, and still alive when the test ends."""
    yield pool
    assert pool.process.poll() is None, pool.log()


def _served_or_dead(result: AsyncResult, worker: Worker) -> None:
    """Wait until ``result`` is ready; return early (to fail at once) if the worker died."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline and worker.process.poll() is None and not result.ready():
        time.sleep(0.05)


def _log_lines(worker: Worker, text: str) -> list[str]:
    return [
        line for line in worker.log_path.read_text(errors="replace").splitlines() if text in line
    ]


@pytest.mark.parametrize("kind", list(POISONS))
def test_a_poisoned_message_is_refused_answered_and_the_worker_serves_on(
    kind: str, celery_app: Celery, worker: Worker, redis_client: redis.Redis
) -> None:
    poison = POISONS[kind]
    task_id = str(uuid.uuid4())
    tag, raw = poison.build(task_id, poison.queue)
    logged_before = len(_log_lines(worker, poison.logged))
    # Given a poisoned message pushed straight onto its queue, and a normal one behind it
    redis_client.lpush(poison.queue, raw)
    behind = celery_app.send_task("ai.ping", queue=poison.queue)
    _served_or_dead(behind, worker)
    # Then the worker is alive and served the message behind the poison
    assert worker.process.poll() is None, worker.log()
    assert behind.get(timeout=TIMEOUT) == "pong"
    # and the poisoned message is gone from the queue and from the unacked set
    assert raw not in redis_client.lrange(poison.queue, 0, -1)
    assert not redis_client.hexists("unacked", tag)
    # and the producer holding its task id reads a contract error with the code
    if poison.code is not None:
        answer = celery_app.AsyncResult(task_id).get(timeout=TIMEOUT)
        assert answer["status"] == "error"
        assert answer["error"]["code"] == poison.code
        assert answer["request_id"] == task_id
        assert SECRET not in json.dumps(answer)
    else:
        assert not redis_client.exists(f"celery-task-meta-{task_id}")
    # and the refusal was logged once, on one line naming the queue, without the body
    refusals = _log_lines(worker, poison.logged)
    assert len(refusals) == logged_before + 1
    assert f"queue {poison.queue}" in refusals[-1]
    if poison.code is not None:
        assert len(_log_lines(worker, task_id)) == 1
    assert SECRET not in worker.log_path.read_text(errors="replace")
    # and a normal request sent afterwards is answered
    answer = celery_app.send_task(
        "ai.generate", kwargs={"request": {"prompt": "What is a pod?"}}, queue="router"
    ).get(timeout=TIMEOUT)
    assert answer["status"] == "ok"


@pytest.fixture()
def rabbit_worker(celery_app, pool, healthy) -> Iterator[tuple[Worker, Celery, str]]:  # type: ignore[no-untyped-def]
    """A worker on RabbitMQ (results in the test Redis) consuming a queue of this test's own."""
    queue = f"poison-{uuid.uuid4().hex[:12]}"
    app = Celery("poison-amqp", broker=AMQP_URL, backend=TEST_REDIS_URL, set_as_current=False)
    env = worker_env(CELERY_BROKER_URL=AMQP_URL, CELERY_RESULT_BACKEND=TEST_REDIS_URL)
    rabbit = Worker(env, queues=(queue,), concurrency=1)
    try:
        rabbit.wait_ready(app)
        yield rabbit, app, queue
    finally:
        rabbit.stop()
        with app.connection_for_write() as connection:
            channel = connection.default_channel
            # Stopped, the worker has given back whatever it held unacked: none may be left.
            left = channel.queue_declare(queue, passive=True).message_count
            channel.queue_delete(queue)
            channel.exchange_delete(queue)
        app.close()
        assert left == 0


def test_poisoned_messages_over_rabbitmq_are_refused_and_answered(rabbit_worker) -> None:  # type: ignore[no-untyped-def]
    worker, app, queue = rabbit_worker
    poisons: list[tuple[bytes, dict[str, Any]]] = [
        (json.dumps(REQUEST).encode(), {}),  # a body that is an object
        (b"null", {}),
        # a body kombu cannot decompress: Celery's own decode-error handler would log it
        (SECRET.encode(), {"compression": "application/x-gzip"}),
    ]
    answers = {}
    # Given poisoned messages published raw to the worker's queue on RabbitMQ
    with app.connection_for_write() as connection:
        producer = connection.Producer()
        for body, extra in poisons:
            task_id = str(uuid.uuid4())
            producer.publish(
                body,
                exchange="",
                routing_key=queue,
                content_type="application/json",
                content_encoding="utf-8",
                headers=_headers("ai.generate", task_id, **extra),
                correlation_id=task_id,
                delivery_mode=2,
                declare=[Queue(queue)],
            )
            answers[task_id] = app.AsyncResult(task_id)
    behind = app.send_task("ai.ping", queue=queue)
    _served_or_dead(behind, worker)
    # Then the worker lives and serves the message behind them
    assert worker.process.poll() is None, worker.log()
    assert behind.get(timeout=TIMEOUT) == "pong"
    # and each producer reads a contract error, logged once without the body
    for task_id, result in answers.items():
        answer = result.get(timeout=TIMEOUT)
        assert (answer["status"], answer["error"]["code"]) == ("error", "malformed_message")
        assert len(_log_lines(worker, task_id)) == 1
    assert SECRET not in worker.log_path.read_text(errors="replace")
