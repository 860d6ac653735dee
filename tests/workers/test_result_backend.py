"""The result backend carries the hop's usage records in the result's own write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.app.task import Context

from aipool.attempt import result_write
from aipool.ledger.outbox import OUTBOX
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import PENDING_KEY
from tests.conftest import TEST_REDIS_URL
from tests.support.shared_servers import redis_db
from workers.result_backend import FinishWriter, RedisBackend, install

OTHER_DB_URL = redis_db(13)
ROOT = Path(__file__).resolve().parents[2]


def _backend(url: str) -> RedisBackend:
    app = Celery("result-backend-test", backend=url, set_as_current=False)
    install(app)
    backend = app.backend
    assert isinstance(backend, RedisBackend)
    return backend


def _record(request_id: str) -> UsageRecord:
    return UsageRecord(request_id, 0, "ollama", "llama3.2:3b", "ok", True, input_tokens=5)


@pytest.fixture()
def held(redis_client: redis.Redis) -> Iterator[None]:
    """A task running in this process, the ledger spool empty before and after."""
    redis_client.delete(PENDING_KEY)
    OUTBOX.task_started()
    yield
    OUTBOX.task_ended()
    redis_client.delete(PENDING_KEY)


def test_given_the_pool_app_when_its_backend_is_built_then_it_is_this_one() -> None:
    # The celery command sets result_backend from CELERY_RESULT_BACKEND over the settings: the
    # class must follow the URL's scheme, whatever sets it.
    from workers.app import app

    assert isinstance(app.backend, RedisBackend)
    assert isinstance(_backend(TEST_REDIS_URL), RedisBackend)


def test_given_sentinels_when_the_pool_app_loads_then_broker_and_results_are_the_pools_own_on_them() -> (
    None
):
    # Given REDIS_URL naming sentinels (nothing listens there: nothing here connects)
    script = (
        "from workers.app import app\n"
        "print(app.conf.broker_transport, type(app.backend).__name__, "
        "app.backend._shares_ledger())\n"
    )
    env = {
        **os.environ,
        "REDIS_URL": "sentinel://127.0.0.1:1/3;sentinel://127.0.0.1:2/3",
        "AIPOOL_REDIS_SENTINEL_MASTER": "aipool",
    }
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    # Then the broker is the pool's Sentinel transport (envelopes checked at the edge), results are
    # the pool's one-write backend on the same master, and the usage records ride with them
    transport, backend, rides = out.stdout.split()
    assert transport == "workers.edge.transport:SentinelTransport"
    assert (backend, rides) == ("SentinelBackend", "True")


@pytest.mark.usefixtures("held")
def test_given_held_records_when_a_result_is_written_then_they_go_with_it(
    redis_client: redis.Redis,
) -> None:
    # Given
    backend = _backend(TEST_REDIS_URL)
    OUTBOX.hold(_record("r1"))
    # When
    backend.store_result("task-r1", {"answer": 1}, "SUCCESS")
    # Then: the result and the record are both in Redis, nothing is left to push
    assert backend.get_task_meta("task-r1")["result"] == {"answer": 1}
    assert [
        UsageRecord.from_json(x).request_id for x in redis_client.lrange(PENDING_KEY, 0, -1)
    ] == ["r1"]
    assert OUTBOX.take() == []
    backend.forget("task-r1")


@pytest.mark.usefixtures("held")
def test_given_a_result_write_that_fails_when_it_ends_then_the_records_are_held_again(
    redis_client: redis.Redis,
) -> None:
    # Given: the spool key holds a value of the wrong type, so the write's LPUSH fails
    backend = _backend(TEST_REDIS_URL)
    redis_client.set(PENDING_KEY, "not a list")
    OUTBOX.hold(_record("r1"))
    # When
    with pytest.raises(redis.ResponseError):
        backend.store_result("task-r2", {"answer": 2}, "SUCCESS")
    # Then: the record is not lost; the task's end pushes it on its own
    assert [r.request_id for r in OUTBOX.take()] == ["r1"]


@pytest.mark.usefixtures("held")
def test_given_a_backend_on_another_redis_when_a_result_is_written_then_records_stay_held(
    redis_client: redis.Redis,
) -> None:
    # Given: results in another database than the ledger's spool
    backend = _backend(OTHER_DB_URL)
    OUTBOX.hold(_record("r1"))
    # When
    backend.store_result("task-r3", {"answer": 3}, "SUCCESS")
    # Then: the record did not go to the wrong database
    assert [r.request_id for r in OUTBOX.take()] == ["r1"]
    assert redis_client.llen(PENDING_KEY) == 0
    backend.forget("task-r3")


@pytest.mark.usefixtures("held")
def test_given_held_records_when_a_result_is_written_then_it_is_one_round_trip() -> None:
    from aipool.harness.round_trips import counting_round_trips

    # Given a backend that has written once (its script is loaded), and a held record
    backend = _backend(TEST_REDIS_URL)
    backend.store_result("task-r4", {"answer": 4}, "SUCCESS")
    OUTBOX.hold(_record("r4"))
    # When the next result is written, every packet sent to Redis counted
    with counting_round_trips() as trips:
        backend.store_result("task-r5", {"answer": 5}, "SUCCESS")
    # Then result, publication and record went in one round trip (Celery's backend: a GET, then
    # the write, then the record on its own)
    assert trips.sent == 1
    assert backend.get_task_meta("task-r5")["result"] == {"answer": 5}
    backend.forget("task-r4")
    backend.forget("task-r5")


@pytest.mark.usefixtures("held")
def test_given_a_success_stored_when_another_state_is_written_then_the_success_stays(
    redis_client: redis.Redis,
) -> None:
    # Given an answer its producer may have read
    backend = _backend(TEST_REDIS_URL)
    backend.store_result("task-r6", {"answer": 6}, "SUCCESS")
    # When a lost worker's late delivery of the same task writes a failure, its record held
    OUTBOX.hold(_record("r6"))
    backend.store_result("task-r6", ValueError("late"), "FAILURE")
    # Then the answer stays (Celery's own rule), and the late hop's record still reaches the spool
    meta = backend.get_task_meta("task-r6")
    assert (meta["status"], meta["result"]) == ("SUCCESS", {"answer": 6})
    assert redis_client.llen(PENDING_KEY) == 1
    backend.forget("task-r6")


def test_given_a_success_stored_when_a_reused_task_id_is_refused_then_the_refusal_replaces_it(
    redis_client: redis.Redis,
) -> None:
    # Given an answer stored under a task id, and a later answer of another kind under it
    backend = _backend(TEST_REDIS_URL)
    backend.store_result("task-r7", {"status": "ok", "content": "first"}, "SUCCESS")
    backend.store_result("task-r7", {"status": "ok", "content": "second"}, "SUCCESS")
    assert backend.get_task_meta("task-r7")["result"]["content"] == "first"
    # When another request sent under the same id is refused
    refusal = {"status": "error", "error": {"code": "task_id_reused", "message": "reused"}}
    backend.store_result("task-r7", refusal, "SUCCESS")
    # Then the first answer, kept against any other write, is replaced by the refusal alone:
    # nobody holding the id reads an answer that may be another request's
    stored = redis_client.get(backend.get_key_for_task("task-r7"))
    assert json.loads(stored or b"{}")["result"] == refusal
    backend.forget("task-r7")


# -- the result written by the answer's finish (#44) ------------------------------------------


class _Task:
    """What FinishWriter reads of a running task: its backend, its request and its options."""

    def __init__(self, backend: RedisBackend, **request: Any) -> None:
        self.backend = backend
        self.request = Context(id="task-f1", is_eager=False, **request)
        self.ignore_result = False


@pytest.mark.usefixtures("held")
def test_given_the_pools_redis_when_finish_writes_a_result_then_it_is_celerys_write_and_celerys_store_is_skipped(
    redis_client: redis.Redis,
) -> None:
    # Given a task on the pool's Redis, a record held
    backend = _backend(TEST_REDIS_URL)
    OUTBOX.hold(_record("f1"))
    answer = {"status": "ok", "content": "from finish"}
    # When its finish is handed the result's write
    with result_write.writing(FinishWriter(_Task(backend))):
        write = result_write.prepare("task-f1", answer)
        assert write is not None
        redis_client.set(write.key, write.value, ex=write.expires)
        result_write.settled(write, True)
    # Then the write is Celery's own (its key, meta and expiry), the record riding with it
    assert write.key == backend.get_key_for_task("task-f1").decode()
    assert write.expires == backend.expires
    meta = backend.get_task_meta("task-f1")
    assert (meta["status"], meta["result"], meta["task_id"]) == ("SUCCESS", answer, "task-f1")
    assert [UsageRecord.from_json(r).request_id for r in write.records] == ["f1"]
    assert OUTBOX.take() == []
    # And Celery's store that follows writes nothing (not even over a state that is no SUCCESS)
    redis_client.set(write.key, json.dumps({"status": "PENDING"}))
    backend.store_result("task-f1", {"status": "ok", "content": "celery's"}, "SUCCESS")
    assert backend.get_task_meta("task-f1")["status"] == "PENDING"
    # Only that one store: the next is Celery's again
    backend.store_result("task-f1", {"status": "ok", "content": "celery's"}, "SUCCESS")
    assert backend.get_task_meta("task-f1")["result"]["content"] == "celery's"
    backend.forget("task-f1")


@pytest.mark.usefixtures("held")
def test_given_a_write_finish_could_not_make_when_it_ends_then_its_records_are_held_again() -> None:
    backend = _backend(TEST_REDIS_URL)
    OUTBOX.hold(_record("f2"))
    with result_write.writing(FinishWriter(_Task(backend))):
        write = result_write.prepare("task-f1", {"status": "ok"})
        assert write is not None
        result_write.settled(write, False)
    assert [r.request_id for r in OUTBOX.take()] == ["f2"]
    assert not result_write.written_already("task-f1")


@pytest.mark.parametrize(
    ("url", "request_options"),
    [
        (OTHER_DB_URL, {}),  # results in another database than the attempts'
        (TEST_REDIS_URL, {"callbacks": [{"task": "tests.collect"}]}),  # children come later
        (TEST_REDIS_URL, {"chain": [{"task": "tests.collect"}]}),
        (TEST_REDIS_URL, {"ignore_result": True}),
    ],
)
def test_given_a_result_celery_must_write_itself_when_finish_asks_then_it_gets_no_write(
    url: str, request_options: dict[str, Any]
) -> None:
    writer = FinishWriter(_Task(_backend(url), **request_options))
    assert writer.prepare("task-f1", {"status": "ok"}) is None
