"""A pool that requires a replica to hold each paid call's record, on a real master and replica:
while the replica stalls (SIGSTOP) a real worker calls no paid provider, the request is still
answered (the free local model, or the chain's end), and each paid hop says ``replicas_behind``;
once the replica answers again, paid calls are made as before."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from aipool.simulator import Simulator
from tests.support.attempts import ledger
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.requests import CRITICAL, QUESTION
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

PAID = ("claude", "gemini", "nemotron")
REQUIRED = {
    "AIPOOL_REDIS_REPLICA_ACKS": "1",
    "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": "0.05",
    "AIPOOL_REDIS_REPLICA_ACK_REQUIRED": "1",
    "AIPOOL_CLAUDE_RPM": "unlimited",
}


@pytest.mark.timeout(180)
def test_a_stalled_replica_stops_paid_calls_when_required_and_the_pool_still_answers(
    redis_server: Callable[..., RedisServer],
    providers: Simulator,
    spawn_worker: Callable[..., Worker],
    producer: Callable[..., Producer],
) -> None:
    # Given a worker on a master with one replica, requiring the replica to hold paid calls
    master = redis_server()
    replica = RedisServer(replica_of=master.port).start()
    try:
        linked = replica.client()
        eventually(
            lambda: linked.info("replication").get("master_link_status") == "up", 20, "in sync"
        )
        spawn_worker(master.url, concurrency=1, **REQUIRED)
        send = producer(master.url)
        before = {p: providers.calls(p) for p in (*PAID, "ollama")}
        # When the replica stalls and a critical request (Claude first) and a free one arrive
        assert replica.process is not None
        replica.process.send_signal(signal.SIGSTOP)
        outcomes = send.collect([send.send(CRITICAL), send.send(QUESTION)], 60)
        # Then both are answered, and no paid provider was called
        assert [o.status for o in outcomes] in (["ok", "ok"], ["fallback", "ok"]), outcomes
        assert {p: providers.calls(p) - before[p] for p in PAID} == dict.fromkeys(PAID, 0)
        # And every paid hop of the critical request says why, its $0 row waiting for the ledger
        critical = outcomes[0].answer or {}
        paid = [a for a in critical["attempts"] if a["provider"] in PAID]
        assert paid and {a["outcome"] for a in paid} == {"replicas_behind"}, critical["attempts"]
        rows = [r for r in ledger(master.client()) if r.outcome == "replicas_behind"]
        assert {r.provider for r in rows} == {a["provider"] for a in paid}
        assert all(r.input_tokens + r.output_tokens == 0 and not r.cost_usd for r in rows)
        # When the replica answers again, a critical request is answered by Claude
        replica.process.send_signal(signal.SIGCONT)
        (again,) = send.collect([send.send(CRITICAL)], 60)
        assert (again.status, (again.answer or {}).get("provider")) == ("ok", "claude")
        assert providers.calls("claude") - before["claude"] == 1
    finally:
        if replica.process is not None:
            replica.process.send_signal(signal.SIGCONT)
        replica.stop()
