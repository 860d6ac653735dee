"""A producer that forgets ``queue="router"`` is still answered, and the worker says which queue
to use; a worker's first log line names the Redis and ledger it serves."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

from tests.conftest import TEST_REDIS_URL
from tests.support.waiting import eventually
from workers.announce import where_line
from workers.default_queue import MisrouteWarning

# Imports nothing but celery: what a service in another repository runs.
FOREIGN_PRODUCER = """
import json, sys
from celery import Celery
app = Celery(broker=sys.argv[1], backend=sys.argv[1])
result = app.send_task("ai.generate", kwargs={"request": {"prompt": "What is a pod?", "user_id": "x"}})
print(json.dumps(result.get(timeout=60)))
"""


def test_a_request_sent_without_a_queue_is_answered_with_a_warning_naming_router(pool, healthy):
    # Given the pool's router worker, and a producer that imports only celery and names no queue
    # When it sends ai.generate
    done = subprocess.run(
        [sys.executable, "-I", "-c", FOREIGN_PRODUCER, TEST_REDIS_URL],
        capture_output=True,
        text=True,
        timeout=90,
        cwd="/",
    )
    # Then it gets the pool's answer
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == "ok"
    # And the worker warned that the message came through Celery's default queue
    line = eventually(
        lambda: next((x for x in pool.log().splitlines() if "default queue 'celery'" in x), None),
        10,
        "the misroute warning",
    )
    assert "queue='router'" in line


def test_the_first_log_line_names_the_broker_and_the_ledger(pool):
    first = next(line for line in pool.log_path.read_text().splitlines() if line.startswith("["))
    assert f"broker {TEST_REDIS_URL}" in first
    assert "ledger postgresql+psycopg://" in first


def test_a_worker_on_an_embedded_redis_warns_in_its_first_line():
    level, text = where_line(
        "redis+socket:///tmp/x/redis.sock", "unix:///tmp/x/redis.sock", "sqlite:///x.db"
    )
    assert level == logging.WARNING
    assert text.startswith("broker is an embedded Redis: redis+socket:///tmp/x/redis.sock")
    assert "set REDIS_URL for a shared one" in text


def test_misroutes_are_warned_about_at_most_once_a_minute(caplog):
    now = [0.0]
    warning = MisrouteWarning(every_s=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="aipool.workers"):
        for _ in range(5):
            warning.seen("ai.generate")
        now[0] = 61.0
        warning.seen("ai.generate")
    assert [r.getMessage().split(" ")[0] for r in caplog.records] == ["1", "5"]
