"""``submit()`` enqueues where the workers listen: it never starts a Redis of its own."""

from __future__ import annotations

import subprocess
import sys

import redis

from aipool.redis.embedded import EmbeddedRedis
from tests.support.cli import MARK, ROOT, fresh_env, processes_marked

SUBMIT = (
    "from tasks.client import submit\n"
    "result = submit({'prompt': 'What is a pod?', 'user_id': 'svc'})\n"
    "print(result.id)\n"
)


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_without_a_broker_submit_raises_no_redis_and_starts_nothing(tmp_path):
    # Given a service without REDIS_URL and no embedded Redis on the machine
    env = fresh_env(tmp_path / "runtime")
    # When it submits a request
    done = _python(SUBMIT, env)
    # Then submit() raises the pool's NoRedis saying what to do, and no Redis was started
    assert done.returncode == 1
    assert "aipool.errors.NoRedis: REDIS_URL is not set and no embedded Redis is running" in (
        done.stderr
    )
    assert processes_marked(env[MARK]) == []
    assert not (tmp_path / "runtime").exists()


def test_without_redis_url_submit_uses_the_running_embedded_redis(tmp_path, monkeypatch):
    # Given an embedded Redis announced by its owner
    monkeypatch.setenv("AIPOOL_RUNTIME_DIR", str(tmp_path / "runtime"))
    with EmbeddedRedis(tmp_path / "redis", owner="test") as running:
        env = fresh_env(tmp_path / "runtime")
        # When a service without REDIS_URL submits a request
        done = _python(SUBMIT, env)
        # Then the message waits on that Redis, in the first hop's queue
        assert done.returncode == 0, done.stderr
        client = redis.Redis.from_url(running.redis_url)
        try:
            assert client.llen("ollama") == 1
        finally:
            client.close()


def test_a_producer_with_another_model_name_loses_no_request_during_a_rolling_change(
    healthy, celery_app, pool
):  # type: ignore[no-untyped-def]
    # Given a service that still names Claude's previous model (a rolling change of
    # AIPOOL_MODEL_CLAUDE reached the workers first)
    from celery.result import AsyncResult

    from tests.conftest import worker_env

    code = (
        "from tasks.client import submit\n"
        "r = submit({'prompt': 'Summarise the incident', 'priority': 'critical'})\n"
        "print(r.id)\n"
    )
    env = {**worker_env(), "AIPOOL_MODEL_CLAUDE": "claude-sonnet-4-0-retired"}
    # When it submits a critical request (routed locally, to Claude, with the old model)
    done = _python(code, env)
    assert done.returncode == 0, done.stderr
    answer = AsyncResult(done.stdout.strip(), app=celery_app).get(timeout=60)
    # Then the worker serves it with the model it has, priced as what it ran
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert answer["model"] != "claude-sonnet-4-0-retired"
    assert answer["cost_usd"] > 0


QUESTION = {"prompt": "What is a pod?", "user_id": "svc"}


def _sent_without_a_broker(celery_app, monkeypatch, during_send):  # type: ignore[no-untyped-def]
    # The app's send_task, replaced: nothing is published (no worker takes a stray message
    # later), and ``during_send`` runs at the moment the message would go out.
    from celery.result import AsyncResult

    def send_task(name, **options):  # type: ignore[no-untyped-def]
        during_send(options["task_id"])
        return AsyncResult(options["task_id"], app=celery_app)

    monkeypatch.setattr(celery_app, "send_task", send_task)


def test_a_task_id_submit_mints_is_claimed_after_its_message_is_sent(
    celery_app, clean_redis, monkeypatch
):  # type: ignore[no-untyped-def]
    # Given a producer whose message is watched as it goes out
    from aipool.attempt.identity import journey_id
    from aipool.attempt.task_ids import claim_key
    from tasks.client import submit

    claimed_when_sent = []
    _sent_without_a_broker(
        celery_app,
        monkeypatch,
        lambda task_id: claimed_when_sent.append(clean_redis.exists(claim_key(task_id))),
    )
    # When it submits a request without a task id of its own
    sent = submit(QUESTION, app=celery_app)
    # Then no round trip to claim the id held the message back, and the id is the request's
    # by the time submit() hands it over
    assert claimed_when_sent == [0]
    assert clean_redis.get(claim_key(sent.id)) == journey_id(sent.id, QUESTION).encode()


def test_a_minted_task_id_another_request_claimed_meanwhile_is_answered_with_the_refusal(
    celery_app, clean_redis, monkeypatch
):  # type: ignore[no-untyped-def]
    # Given a minted task id that another request claims while the message goes out (read off
    # the queue)
    from aipool.attempt.task_ids import claim
    from tasks.client import submit

    _sent_without_a_broker(
        celery_app, monkeypatch, lambda task_id: claim(clean_redis, task_id, "another", 60)
    )
    # When the request is submitted
    sent = submit(QUESTION, app=celery_app)
    # Then whoever holds the id reads the refusal of a reused id, never an answer
    answer = sent.get(timeout=5)
    assert (answer["status"], answer["error"]["code"]) == ("error", "task_id_reused")


def test_a_producer_decides_a_route_it_decided_before_at_the_cost_of_a_lookup(
    celery_app, clean_redis, monkeypatch
):  # type: ignore[no-untyped-def]
    # Given a producer's decisions counted (the same pure function the worker recalls:
    # aipool.routing.recall)
    import aipool.routing.recall as recall
    from tasks.client import route

    decided = []

    decide = recall.decide

    def counted(*args):  # type: ignore[no-untyped-def]
        decided.append(1)
        return decide(*args)

    monkeypatch.setattr(recall, "decide", counted)
    recall._recall.forget()
    # When it routes the same request three times and another once
    first, *again = [route(dict(QUESTION)) for _ in range(3)]
    other = route({**QUESTION, "prompt": "Review this diff for SQL injection: ..."})
    # Then it decided twice: each request's route once, the same route each time
    assert len(decided) == 2
    assert all(d.kwargs["journey"]["route"] == first.kwargs["journey"]["route"] for d in again)
    assert other.kwargs["journey"]["route"] != first.kwargs["journey"]["route"]


def _routed_nowhere():  # type: ignore[no-untyped-def]
    # A request routed by submit()'s producer, its message bound for a queue no worker serves.
    import dataclasses

    from tasks.client import route

    return dataclasses.replace(route(dict(QUESTION)), queue="test-claim-rides")


def test_a_minted_task_id_is_claimed_in_its_messages_own_round_trip(celery_app, clean_redis):  # type: ignore[no-untyped-def]
    # Given a request routed by submit()'s producer, its message bound for a queue no worker
    # serves, and the producer's writes to Redis counted
    from aipool.attempt.identity import journey_id
    from aipool.attempt.task_ids import claim_key
    from tasks.client import send
    from tests.support.redis_writes import claims, counted_writes

    dispatch = _routed_nowhere()
    try:
        # When the message is sent
        with counted_writes() as sent:
            result = send(dispatch, app=celery_app)
        # Then one round trip carried both the message and the claim of its id, and the id
        # is the request's before send() hands it over (issue #44: a round trip fewer with
        # Redis a network away)
        assert claims(sent) == [True]
        assert clean_redis.llen("test-claim-rides") == 1
        assert clean_redis.get(claim_key(result.id)) == journey_id(result.id, QUESTION).encode()
    finally:
        clean_redis.delete("test-claim-rides")


def test_a_claim_riding_with_its_message_that_finds_another_request_there_is_refused(
    celery_app, clean_redis
):  # type: ignore[no-untyped-def]
    # Given a minted task id another request already holds (read off the queue, say) when its
    # message and claim go out together
    from aipool.attempt.task_ids import claim
    from tasks.client import send

    dispatch = _routed_nowhere()
    claim(clean_redis, dispatch.task_id, "another", 60)
    try:
        # When the message is sent
        result = send(dispatch, app=celery_app)
        # Then the message is out, and whoever holds the id reads the refusal of a reused id
        assert clean_redis.llen("test-claim-rides") == 1
        answer = result.get(timeout=5)
        assert (answer["status"], answer["error"]["code"]) == ("error", "task_id_reused")
    finally:
        clean_redis.delete("test-claim-rides")


_SEND_COUNTING_WRITES = """
import dataclasses, json
from workers.app import app
from tasks.client import route, send
from tests.support.redis_writes import claims, counted_writes

dispatch = dataclasses.replace(route({"prompt": "What is a pod?"}), queue="test-claim-rides")
with counted_writes() as sent:
    result = send(dispatch, app=app)
print(json.dumps({"id": result.id, "claims": claims(sent)}))
"""


def test_through_sentinel_a_minted_task_id_is_claimed_in_its_messages_round_trip(
    sentinel_set,
):  # type: ignore[no-untyped-def]
    import json

    from aipool.attempt.task_ids import claim_key
    from tests.conftest import worker_env

    # Given the pool's Redis behind Sentinel (a master, a replica, three sentinels), and a
    # producer process of its own whose writes to Redis are counted
    redis_set = sentinel_set()
    # When it sends a request to a queue no worker serves
    done = _python(_SEND_COUNTING_WRITES, worker_env(**redis_set.env))
    assert done.returncode == 0, done.stderr
    sent = json.loads(done.stdout.strip().splitlines()[-1])
    # Then the claim went in the message's own round trip, and both are on the master
    assert sent["claims"] == [True]
    master = redis_set.client()
    assert master.llen("test-claim-rides") == 1
    assert master.exists(claim_key(sent["id"]))
