"""A busy delivery's recheck, sent by a worker whose host clock is off the pool's.

A delivery that finds its call owned by another comes back a few seconds later (``Busy``: at most
:data:`aipool.attempt.runner.BUSY_RECHECK_S`). Celery turned that ``countdown`` into an absolute
ETA on the sending worker's clock, and the worker that received the message waited for it on its
own (issue #42). Now the ETA is written on the pool's clock (Redis's) and read there: the
receiving worker moves it onto its host's clock (``workers/edge/eta.py``). Real worker processes,
libfaketime for the skewed host (ahead of Redis, and behind it).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path

import pytest
import redis

from aipool.attempt.runner import BUSY_RECHECK_S
from aipool.simulator import Simulator
from tests.support.private_pool import private_pool, send
from tests.support.requests import CRITICAL
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration
SKEW_S = 60


def _faketime_library() -> str:
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))
    assert found, "libfaketime is not installed (.ci/services installs it)"
    return str(found[0])


def _eta_of(client: redis.Redis, task_id: str) -> float | None:
    """The ETA (epoch seconds) of the message ``task_id`` waiting in the broker or held by a
    worker (the Redis transport keeps a held message in ``unacked``), if it has one."""
    bodies = [
        raw
        for key in client.keys("*")
        if client.type(key) == b"list"
        for raw in client.lrange(key, 0, -1)
    ]
    bodies += (
        [json.loads(raw)[0] for raw in client.hvals("unacked")] if client.exists("unacked") else []
    )
    for body in bodies:
        message = json.loads(body) if isinstance(body, bytes | str) else body
        if not isinstance(message, dict):
            continue  # not a message: another list (a provider's latency samples)
        headers = message.get("headers") or {}
        if headers.get("id") == task_id and headers.get("eta"):
            return datetime.fromisoformat(headers["eta"]).timestamp()
    return None


@pytest.mark.parametrize("skew_s", [SKEW_S, -SKEW_S], ids=["ahead", "behind"])
def test_a_busy_recheck_sent_by_a_worker_off_redis_waits_its_delay_on_the_pools_clock(
    providers: Simulator, ledger_url: str, skew_s: int
) -> None:
    # Given a worker whose host clock is 60 s ahead of Redis's (or behind it), and Claude
    # slow to answer (the request's deadline cuts its call after about 2 s)
    providers.set_fault("claude", "slow", ms=8000)
    with private_pool(
        4,
        concurrency=2,
        DATABASE_URL=ledger_url,
        AIPOOL_CLAUDE_RPM="unlimited",
        LD_PRELOAD=_faketime_library(),
        FAKETIME=f"{skew_s:+d}s",
        FAKETIME_DONT_FAKE_MONOTONIC="1",
    ) as pool:
        # When one critical request is published twice under one task id: the second delivery
        # finds Claude's call owned by the first and comes back later
        task_id = str(uuid.uuid4())
        first = send(pool, CRITICAL, task_id=task_id)
        send(pool, CRITICAL, task_id=task_id)
        eta = eventually(lambda: _eta_of(pool.client, task_id), 30, "the recheck was sent")
        seconds, micros = pool.client.time()
        ahead = eta - (seconds + micros / 1e6)
        first.get(timeout=60)
        deliveries = pool.worker.log_path.read_text().count(f"[{task_id}] received")
    print(
        f"recheck ETA {ahead:.1f} s after Redis's now (at most {BUSY_RECHECK_S:g} s asked); "
        f"{deliveries} deliveries of the task id"
    )
    # Then the recheck is due within its delay on the pool's (Redis's) clock, not a minute
    # later or earlier
    assert -1.0 <= ahead <= BUSY_RECHECK_S + 1.0
    # And the worker waited for it on its own clock: six or seven deliveries of the task id (each
    # copy's router and Claude hops, the first's next hop, the recheck), not the 38 of a worker
    # ahead that read the ETA on its host's clock and came back at once while the call lasted
    assert deliveries <= 10
