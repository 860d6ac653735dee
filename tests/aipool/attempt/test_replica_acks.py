"""The replica acknowledgement around a paid call's deciding writes (``begin``, ``finish``), on a
real master and a real replica that stops answering (SIGSTOP): with the acknowledgement required
no provider is called on a record only the master holds; without, the call is made and the
shortfall counted."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest
from prometheus_client import REGISTRY

from aipool.attempt.identity import journey_id
from aipool.attempt.layout import record_key
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.runner import HopRunner
from aipool.attempt.visit import Done, Forward
from aipool.breaker import breakers_for
from aipool.contract.completion import Completion
from aipool.contract.journey import Journey
from aipool.contract.request import parse_request
from aipool.contract.route import Hop, Route
from aipool.errors import ReplicasBehind
from aipool.quota import quotas_for
from aipool.redis.durability import ReplicaAcks
from tests.aipool.attempt.test_runner import Provider
from tests.support.attempts import begin, header, ledger
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

RAW = {"prompt": "What is a pod?"}
REQUEST = parse_request(RAW)
ROUTE = Route(
    intent="QUERY",
    complexity=1,
    chain=(
        Hop("gemini", "gemini-2.5-flash"),
        Hop("claude", "claude-sonnet-5"),
        Hop("static", "static"),
    ),
    reason="test",
)
REQUIRED = ReplicaAcks(replicas=1, timeout_s=0.05, required=True)
WANTED = ReplicaAcks(replicas=1, timeout_s=0.05, required=False)
#: For a replica that is expected to acknowledge: WAIT returns as soon as it does, and a loaded
#: two-core host can take longer than 50 ms to get the replica's ack back (one such run called
#: the provider twice with WANTED, and not at all with REQUIRED).
PATIENT_REQUIRED = ReplicaAcks(replicas=1, timeout_s=5.0, required=True)
PATIENT_WANTED = ReplicaAcks(replicas=1, timeout_s=5.0, required=False)


@pytest.fixture()
def master_and_replica() -> Iterator[tuple[RedisServer, RedisServer]]:
    """A master and a replica in sync with it; the replica resumed at the end if stopped."""
    master = RedisServer().start()
    replica = RedisServer(replica_of=master.port).start()
    linked = replica.client()
    eventually(lambda: linked.info("replication").get("master_link_status") == "up", 20, "in sync")
    yield master, replica
    assert replica.process is not None
    replica.process.send_signal(signal.SIGCONT)
    replica.stop()
    master.stop()


def _stop(replica: RedisServer) -> None:
    """The replica stops answering (a long GC-like stall, a partition): the master still counts it
    linked, so WAIT waits out its timeout."""
    assert replica.process is not None
    replica.process.send_signal(signal.SIGSTOP)


def _runner(master: RedisServer, acks: ReplicaAcks, providers: dict[str, Provider]) -> HopRunner:
    client = master.client()
    book = AttemptBook(client, breakers_for(client), quotas_for(client), acks=acks)
    return HopRunner(
        book,
        observers=[],
        pricing=lambda *_: Decimal("0.01"),
        providers=lambda name: providers.get(name) or Provider(),
    )


def _run(runner: HopRunner, request_id: str, position: int = 0) -> Done | Forward:
    journey = Journey(route=ROUTE, position=position, id=journey_id(request_id, RAW))
    return runner.run(REQUEST, request_id, journey)


def _shortfalls(provider: str, op: str) -> float:
    labels = {"provider": provider, "op": op}
    return REGISTRY.get_sample_value("aipool_replica_ack_shortfalls_total", labels) or 0.0


def test_given_a_required_acknowledgement_and_a_stalled_replica_then_no_provider_is_called(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    master, replica = master_and_replica
    gemini, claude = Provider(), Provider()
    runner = _runner(master, REQUIRED, {"gemini": gemini, "claude": claude})
    before = _shortfalls("gemini", "begin")
    # Given a replica that stopped answering
    _stop(replica)
    # When a paid hop runs
    step = _run(runner, "req-required")
    # Then gemini is not called, the attempt says why, and the request moves on
    assert gemini.calls == 0
    assert isinstance(step, Forward) and step.queue == "claude"
    attempts = step.journey.attempts
    assert [(a.provider, a.outcome) for a in attempts] == [("gemini", "replicas_behind")]
    assert attempts[0].error is not None and "replica" in attempts[0].error
    # And it books what the table says: the request counted, no tokens, the permit back (no
    # breaker failure), one ledger row of the skip at $0, the shortfall counted
    usage = quotas_for(master.client())["gemini"].usage()
    assert (usage["daily_requests"]["used"], usage["daily_tokens"]["used"]) == (1, 0)
    assert breakers_for(master.client())["gemini"].snapshot()["consecutive_failures"] == 0
    rows = [
        (r.provider, r.outcome, r.input_tokens + r.output_tokens) for r in ledger(master.client())
    ]
    assert rows == [("gemini", "replicas_behind", 0)]
    assert _shortfalls("gemini", "begin") == before + 1
    # And the next paid hop is not called either: the request gets the chain's end
    last = _run(runner, "req-required", position=1)
    assert claude.calls == 0
    assert isinstance(last, Done) and last.result["status"] == "fallback"
    # And a later delivery of the first message, the replica back, moves on the same way
    # without calling
    assert replica.process is not None
    replica.process.send_signal(signal.SIGCONT)
    again = _run(runner, "req-required")
    assert gemini.calls == 0
    assert isinstance(again, Forward) and again.queue == "claude"
    assert [a.outcome for a in again.journey.attempts] == ["replicas_behind"]


def test_given_an_acknowledgement_not_required_and_a_stalled_replica_then_the_call_is_counted(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    master, replica = master_and_replica
    gemini = Provider()
    runner = _runner(master, WANTED, {"gemini": gemini})
    before = (_shortfalls("gemini", "begin"), _shortfalls("gemini", "finish"))
    # Given a replica that stopped answering
    _stop(replica)
    # When a paid hop runs
    step = _run(runner, "req-wanted")
    # Then gemini answers, and both deciding writes are counted as held by the master only
    assert gemini.calls == 1
    assert isinstance(step, Done) and step.result["status"] == "ok"
    after = (_shortfalls("gemini", "begin"), _shortfalls("gemini", "finish"))
    assert after == (before[0] + 1, before[1] + 1)
    # And every provider's series is exported from the start (0 where none fell short yet), so
    # an alert's rate sees the first shortfall
    for provider in quotas_for(master.client()):
        for op in ("begin", "finish"):
            labels = {"provider": provider, "op": op}
            assert (
                REGISTRY.get_sample_value("aipool_replica_ack_shortfalls_total", labels) is not None
            )


def test_given_a_live_replica_when_required_then_the_call_is_made_and_nothing_counted(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    master, replica = master_and_replica
    gemini = Provider()
    runner = _runner(master, REQUIRED, {"gemini": gemini})
    before = _shortfalls("gemini", "begin")
    step = _run(runner, "req-live")
    assert gemini.calls == 1
    assert isinstance(step, Done) and step.result["status"] == "ok"
    assert _shortfalls("gemini", "begin") == before
    # And the replica holds the answered record the moment the hop returned
    journey = journey_id("req-live", RAW)
    assert replica.client().hget(record_key(journey, "gemini"), "state") == b"answered"


class FailsOverMidCall(Provider):
    """A provider during whose first call the pool's Redis fails over: ``failover()`` runs, then
    ``redeliver()`` (the message delivered again, on the new master), then the call answers."""

    def __init__(self, failover: Callable[[], None]) -> None:
        super().__init__()
        self.failover = failover
        self.redeliver: Callable[[], Done | Forward] | None = None
        self.redelivered: Done | Forward | None = None

    def complete(self, *args: Any, **kwargs: Any) -> Completion:
        answer = super().complete(*args, **kwargs)
        if self.calls == 1 and self.redeliver is not None:
            self.failover()
            self.redelivered = self.redeliver()
        return answer


def _promote(replica: RedisServer) -> None:
    """Sentinel's promotion, by hand: the replica stops replicating and takes writes."""
    replica.client().replicaof("NO", "ONE")


@pytest.mark.parametrize(
    ("acks", "patient"),
    [(WANTED, PATIENT_WANTED), (REQUIRED, PATIENT_REQUIRED)],
    ids=["wanted", "required"],
)
def test_given_a_begin_a_replica_held_when_it_is_promoted_mid_call_then_no_second_call(
    master_and_replica: tuple[RedisServer, RedisServer], acks: ReplicaAcks, patient: ReplicaAcks
) -> None:
    # Given a paid call begun with the acknowledgement on, and the replica promoted while the
    # call is in flight (the master lost: the table's failover row)
    master, replica = master_and_replica
    gemini = FailsOverMidCall(lambda: _promote(replica))
    # (the first begin waits for its replica as long as it takes; the new master has none, and
    # its worker waits the usual 50 ms for one)
    first = _runner(master, patient, {"gemini": gemini})
    again = _runner(replica, acks, {"gemini": gemini})
    gemini.redeliver = lambda: _run(again, "req-failover")
    # When the message is delivered again on the new master during the call
    step = _run(first, "req-failover")
    # Then the new master holds the call's record: the redelivery waits for it (busy) and
    # gemini is called once (the table's failover row, "not once a replica held begin"; the
    # acknowledgement guarantees the record is there, which on loopback asynchronous
    # replication usually achieves too: this checks the row, not the WAIT's timing)
    assert gemini.calls == 1
    assert isinstance(gemini.redelivered, Forward) and gemini.redelivered.queue == "gemini"
    assert gemini.redelivered.delay_s > 0
    assert isinstance(step, Done) and step.result["status"] == "ok"


def test_given_a_replica_behind_when_it_is_promoted_mid_call_then_the_second_call_was_counted(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    # Given a replica that no longer receives the master's writes (promoted before the begin:
    # it is behind by every write from then on), and the acknowledgement wanted, not required
    master, replica = master_and_replica
    _promote(replica)
    gemini = FailsOverMidCall(lambda: None)
    first = _runner(master, WANTED, {"gemini": gemini})
    again = _runner(replica, WANTED, {"gemini": gemini})
    gemini.redeliver = lambda: _run(again, "req-behind")
    before = _shortfalls("gemini", "begin")
    # When the message is delivered again on it during the call
    _run(first, "req-behind")
    # Then the provider is called a second time (the table's "calls the provider again" cell,
    # what the acknowledgement bounds), and the begin that no replica held was counted
    assert gemini.calls == 2
    assert _shortfalls("gemini", "begin") >= before + 1


def test_given_a_required_acknowledgement_a_missing_hop_config_is_not_a_shortfall(
    master_and_replica: tuple[RedisServer, RedisServer],
) -> None:
    master, replica = master_and_replica
    client = master.client()
    book = AttemptBook(client, breakers_for(client), quotas_for(client), acks=REQUIRED)
    before = _shortfalls("gemini", "begin")
    # Given a Redis without the stored hop configuration (restarted empty), and a replica that
    # stopped answering
    _stop(replica)
    # When a paid begin is the first op: the script answers that the configuration is missing,
    # the book writes it and asks again
    h = header(journey_id="first-op", chain=ROUTE.chain, costs=(1_000, 8_000, 0))
    with pytest.raises(ReplicasBehind):
        begin(book, h)
    # Then only the begin that wrote is counted (and refused) for the replica: the reply that
    # changed nothing is not a shortfall; the configuration was written once
    assert _shortfalls("gemini", "begin") == before + 1
    assert book.configs.loads == 1
