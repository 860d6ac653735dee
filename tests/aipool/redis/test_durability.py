"""Replica acknowledgement: a deciding write and its WAIT in one round trip, on a real master and
replica, and what the pool does when no replica acknowledges in time."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from aipool.errors import ReplicasBehind
from aipool.redis import durability
from aipool.redis.durability import Acknowledged, ReplicaAcks, run_acknowledged
from aipool.settings import read_settings
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

#: A write whose effect tells how many times it ran.
COUNT = "return redis.call('incr', KEYS[1])"
ONE = ReplicaAcks(replicas=1, timeout_s=0.05)


@pytest.fixture()
def master_and_replica() -> Iterator[tuple[RedisServer, RedisServer]]:
    """A master and a replica in sync with it."""
    master = RedisServer().start()
    replica = RedisServer(replica_of=master.port).start()
    linked = replica.client()
    eventually(lambda: linked.info("replication").get("master_link_status") == "up", 20, "in sync")
    yield master, replica
    replica.stop()
    master.stop()


def test_given_a_live_replica_when_a_write_is_acknowledged_then_the_replica_holds_it_on_return(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    master, replica = master_and_replica
    client = master.client()
    script = client.register_script(COUNT)
    # When a script's write is run with WAIT 1
    reply, acked = run_acknowledged(client, script, ["n"], [], ONE)
    # Then the script answered, one replica acknowledged, and the replica holds the write the
    # moment the call returns (no waiting on asynchronous replication)
    assert (reply, acked) == (1, Acknowledged(1, 1))
    assert replica.client().get("n") == b"1"


def test_given_a_master_that_lost_its_scripts_when_acknowledged_then_it_is_loaded_and_run_once(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    # Given a script the master no longer holds (a restart, or a replica promoted: Redis 7
    # replicates a script's effects, never the script)
    master, _ = master_and_replica
    client = master.client()
    script = client.register_script(COUNT)
    client.script_flush()
    # When it is run acknowledged
    reply, acked = run_acknowledged(client, script, ["n"], [], ONE)
    # Then NOSCRIPT loads it, and the write happens once
    assert (reply, acked) == (1, Acknowledged(1, 1))
    assert client.get("n") == b"1"


def test_given_no_replica_when_a_write_is_acknowledged_then_the_pool_goes_on_and_says_so_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a master whose replica is gone
    master = RedisServer().start()
    try:
        client = master.client()
        script = client.register_script(COUNT)
        monkeypatch.setattr(durability, "_last_said", 0.0)
        # When two writes wait for one replica
        with caplog.at_level(logging.WARNING, logger="aipool.redis"):
            first = run_acknowledged(client, script, ["n"], [], ONE)
            second = run_acknowledged(client, script, ["n"], [], ONE)
        # Then both writes stand, each after the timeout with no replica, and the log says it
        # once (not once per paid call)
        assert (first, second) == ((1, Acknowledged(0, 1)), (2, Acknowledged(0, 1)))
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and said[0].startswith(
            "0 of 1 replicas acknowledged a write that decides a paid call within 0.05 s"
        )
        # And when a replica is required, the shortfall is an error the hop can act on, the
        # write standing on the master all the same
        with pytest.raises(ReplicasBehind, match="no call is made"):
            run_acknowledged(client, script, ["n"], [], ReplicaAcks(1, 0.05, required=True))
        assert client.get("n") == b"3"
    finally:
        master.stop()


def test_given_acknowledgement_off_when_a_script_runs_then_no_wait_is_sent() -> None:
    # Given the default settings (no replica asked for)
    acks = ReplicaAcks.from_settings()
    assert not acks.on
    master = RedisServer().start()
    try:
        client = master.client()
        script = client.register_script(COUNT)
        client.config_resetstat()
        # When a script runs
        reply, acked = run_acknowledged(client, script, ["n"], [], acks)
        # Then it runs alone: Redis counted no WAIT
        assert (reply, acked) == (1, Acknowledged(0, 0))
        assert "cmdstat_wait" not in client.info("commandstats")
    finally:
        master.stop()


@pytest.mark.parametrize(
    ("value", "problem"),
    [("0", "greater than 0"), ("inf", "finite number")],
)
def test_a_timeout_that_would_wait_for_ever_is_refused(value: str, problem: str) -> None:
    # WAIT's timeout 0 blocks for ever: a pool waiting on a dead replica would stop
    problems = read_settings({"AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": value}).problems
    assert len(problems) == 1 and problem in problems[0], problems


def test_a_negative_count_of_replicas_is_refused() -> None:
    reading = read_settings({"AIPOOL_REDIS_REPLICA_ACKS": "-1"})
    assert reading.problems and reading.problems[0].startswith("AIPOOL_REDIS_REPLICA_ACKS=-1")
    assert read_settings({"AIPOOL_REDIS_REPLICA_ACKS": "1"}).checked().redis_replica_acks == 1


def test_a_wait_longer_than_the_connections_timeout_is_refused_naming_both() -> None:
    # A WAIT holds its connection up to its timeout and Redis's next tick (100 ms): a socket
    # timeout shorter than that would fail every paid hop's begin while a replica is away
    problems = read_settings(
        {
            "AIPOOL_REDIS_REPLICA_ACKS": "1",
            "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": "5",
            "AIPOOL_REDIS_SOCKET_TIMEOUT": "5",
        }
    ).problems
    assert len(problems) == 1, problems
    assert "AIPOOL_REDIS_SOCKET_TIMEOUT" in problems[0]
    assert "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT" in problems[0]
    # Without replicas asked for, the timeout is never used, and nothing is refused
    assert not read_settings(
        {"AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": "5", "AIPOOL_REDIS_SOCKET_TIMEOUT": "5"}
    ).problems
    assert not read_settings(
        {"AIPOOL_REDIS_REPLICA_ACKS": "1", "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": "1"}
    ).problems
