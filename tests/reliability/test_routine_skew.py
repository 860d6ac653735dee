"""Beat's routines on hosts whose clocks disagree with the pool's (issue #42, case 6).

Beat sent its routines with Celery's ``expires`` (5 s for the ledger's drain, 60 s for the sweep),
an instant on beat's clock compared with the worker's: a maintenance worker 90 s ahead discarded
every sweep and drain, a beat 10 s behind sent every drain already expired. Here both skews at
once, with libfaketime shifting every clock the processes read.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from sqlalchemy import Engine

from aipool.ledger.testing import empty_ledger
from aipool.ledger.usage_log import UsageLog
from aipool.routines import redis_now, routine_key
from tests.conftest import worker_env
from tests.support.accounting import ledger_charges, ledger_rows, open_leases, quota_charges
from tests.support.attempts import SimulatedPool, begin, header
from tests.support.beat import Beat
from tests.support.faketime import shifted
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def test_a_beat_10_s_behind_and_a_maintenance_worker_90_s_ahead_still_sweep_and_drain(
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    ledger_url: str,
    ledger: Engine,
) -> None:
    # Given a call whose lease ended 70 s ago with no outcome (its worker died), on a pool whose
    # maintenance worker's clock is 90 s ahead and whose beat's clock is 10 s behind
    empty_ledger(ledger)  # beat's quota restore reads it: only this test's rows
    server = redis_server()
    client = server.client()
    simulated = SimulatedPool(client, now=float(client.time()[0]) - 100)
    lost = header(str(uuid.uuid4()), str(uuid.uuid4()))
    begin(simulated.worker(), lost, 0, bound=30)
    assert open_leases(client) == 1
    worker = spawn_worker(server.url, queues=("maintenance",), concurrency=1, **shifted("+90s"))
    beat = Beat(
        worker_env(
            REDIS_URL=server.url,
            CELERY_BROKER_URL=server.url,
            CELERY_RESULT_BACKEND=server.url,
            DATABASE_URL=ledger_url,
            **shifted("-10s", monotonic=True),
        )
    )
    try:
        # When beat has sent a minute's sweep and its drains
        eventually(lambda: open_leases(client) == 0, 75, "the sweep")
        eventually(lambda: UsageLog(client).pending() == 0, 20, "the drain")
    finally:
        record_figure(
            "beat 10 s behind, worker 90 s ahead", "leases left open", open_leases(client)
        )
        log = worker.log()
        beat.stop()
    # Then the call is booked in the ledger at its estimate, by the routines beat sent
    rows = ledger_rows(ledger, [lost.request_id])
    assert [(r.provider, r.outcome, r.estimated) for r in rows] == [("gemini", "abandoned", True)]
    assert quota_charges(client) == ledger_charges(rows)
    assert "aipool.sweep_attempts" in log
    # And the drains that ran were beat's, stamped when sent (with Redis's time)
    sent = client.hget(routine_key("aipool.drain_ledger"), "sent")
    assert sent is not None and abs(float(sent) - redis_now(client)) < 30
