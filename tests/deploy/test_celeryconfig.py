"""celeryconfig under each broker: what an operator gets by setting only ``CELERY_BROKER_URL``.

Each case imports the settings in a fresh interpreter with the environment a deployment sets,
because ``celeryconfig`` reads the environment once, at import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
REDIS = "redis://:pw@redis.internal:6379/4"
AMQP = "amqp://aipool:pw@rabbitmq.internal:5672/aipool"


def _settings(**env: str) -> dict[str, Any]:
    script = (
        "import json, celeryconfig as c\n"
        "print(json.dumps({'broker_url': c.broker_url, 'result_backend': c.result_backend,\n"
        "  'transport': c.broker_transport_options,\n"
        "  'result_transport': c.result_backend_transport_options,\n"
        "  'queues': {q.name: q.queue_arguments for q in c.task_queues}}))\n"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")}
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_given_only_an_amqp_broker_when_loaded_then_results_stay_in_redis() -> None:
    # Given an operator who sets RabbitMQ as broker and nothing else
    settings = _settings(REDIS_URL=REDIS, CELERY_BROKER_URL=AMQP)
    # Then the broker is RabbitMQ and the result backend is REDIS_URL, never the AMQP URL
    assert settings["broker_url"] == AMQP
    assert settings["result_backend"].endswith(REDIS)
    assert "amqp" not in settings["result_backend"]
    # and RabbitMQ gets its own transport options (no Redis visibility timeout), confirmed publishes
    assert settings["transport"] == {"confirm_publish": True}
    # and every queue of the pool is declared as a quorum queue
    assert all(args == {"x-queue-type": "quorum"} for args in settings["queues"].values())


def test_given_the_redis_broker_when_loaded_then_priorities_are_off_and_lost_workers_return() -> (
    None
):
    # Given the default broker (REDIS_URL)
    settings = _settings(REDIS_URL=REDIS, AIPOOL_TASK_TIME_LIMIT="120")
    transport = settings["transport"]
    # Then one list per queue, whatever a message's priority (what KEDA's list scaler counts)
    assert transport["priority_steps"] == [0]
    # and a dead worker's messages return after the hard limit + 60 s, looked for every tenth
    assert transport["visibility_timeout"] == 180
    assert transport["unacked_restore_interval"] == 18
    assert settings["broker_url"] == settings["result_backend"].split("+", 1)[-1] == REDIS


def test_given_sentinels_when_loaded_then_broker_and_results_follow_the_master_they_name() -> None:
    # Given REDIS_URL naming three sentinels, the master's name, and the sentinels' own password
    sentinels = "sentinel://:pw@s1:26379/4;sentinel://s2:26379/4;sentinel://s3:26379/4"
    settings = _settings(
        REDIS_URL=sentinels,
        AIPOOL_REDIS_SENTINEL_MASTER="aipool",
        AIPOOL_REDIS_SENTINEL_PASSWORD="sentinel-pw",
    )
    # Then broker and result backend are kombu's and Celery's Sentinel ones on that URL, told
    # the master's name and how to reach the sentinels
    assert settings["broker_url"] == settings["result_backend"] == sentinels
    for options in (settings["transport"], settings["result_transport"]):
        assert options["master_name"] == "aipool"
        assert options["sentinel_kwargs"] == {
            "password": "sentinel-pw",
            "socket_connect_timeout": 5.0,
            "socket_timeout": 5.0,
        }
    # and the broker keeps the Redis broker's own options
    assert settings["transport"]["priority_steps"] == [0]


def test_given_task_events_off_when_a_flower_asks_for_them_then_the_worker_sends_them() -> None:
    from tests.support.events import heard_events
    from tests.support.private_pool import private_pool
    from tests.support.waiting import eventually

    # Given a worker started with AIPOOL_TASK_EVENTS=0 (a pool without Flower), on a database of
    # its own (events too are per database), and a listener to the events Flower would get
    with (
        private_pool(
            11, app="workers.app", queues=("router",), concurrency=1, AIPOOL_TASK_EVENTS="0"
        ) as pool,
        heard_events(pool.app) as events,
    ):
        # (listening once the worker's heartbeat, a worker event, is heard)
        eventually(lambda: any(e["type"] == "worker-heartbeat" for e in events), 15, "listening")
        # When a request is served
        first = pool.app.send_task("ai.ping", queue="router")
        assert first.get(timeout=10) == "pong"
        # (its message acked: the worker has done all it does for it, events included, in the
        # callback that acks it, before it can read Flower's command)
        eventually(lambda: not pool.client.hlen("unacked"), 10, "first acked")
        # and then Flower asks for task events, as it does every few seconds while it runs
        pool.app.control.enable_events()
        second = pool.app.send_task("ai.ping", queue="router")
        assert second.get(timeout=10) == "pong"
        # Then the next request's events reach Flower
        eventually(
            lambda: any(
                e["type"] == "task-succeeded" and e.get("uuid") == second.id for e in events
            ),
            10,
            "task events after enable_events",
        )
    # and the worker sent none of the first request, served before Flower asked
    sent = [e for e in events if e["hostname"] == pool.worker.name and e.get("uuid") == first.id]
    assert not sent, sent
