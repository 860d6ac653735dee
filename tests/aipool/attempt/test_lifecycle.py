"""The attempt's lifecycle table, cell by cell, over the real script (fakeredis and real Redis).

Each test is one interleaving that broke the pool's promises before the table existed (issue #20):
two live deliveries both calling, a paid answer thrown away by a redelivery, the sweep cancelling a
live call, a success that did not end a run of failures, a worker whose clock was ahead.
"""

from __future__ import annotations

from typing import Any

import pytest

from aipool.attempt.hop_config import CONFIG_PREFIX
from aipool.attempt.layout import (
    BEGIN,
    Busy,
    Call,
    ConfigMissing,
    Ended,
    Kept,
    Missing,
    Recorded,
    Routed,
    header_args,
    read_reply,
    record_key,
)
from aipool.attempt.lifecycle import _SCRIPTS
from aipool.breaker import BreakerState
from aipool.contract.route import Hop
from aipool.settings import settings
from aipool.settings.provider_limits import BreakerSettings, ProviderLimits, QuotaLimits
from tests.support.attempts import (
    SimulatedPool,
    answered,
    begin,
    failed,
    header,
    ledger,
    result_write,
    row,
    usage,
)
from tests.support.guards import client, real_redis

__all__ = ["client", "real_redis"]


@pytest.fixture()
def pool(client: Any) -> SimulatedPool:
    return SimulatedPool(client)


def test_a_second_live_delivery_never_calls(pool: SimulatedPool) -> None:
    # Given one delivery of an attempt calling Gemini
    worker, other = pool.worker(), pool.worker()
    h = header()
    first = begin(worker, h, owner="first")
    assert isinstance(first, Call)
    # When the same message is delivered again while the call runs (a requeue after a dropped
    # connection, a countdown past the visibility timeout, a producer's duplicate publish)
    second = begin(other, h, owner="second")
    # Then the second delivery is told the call is in hand, and nothing more is charged
    assert isinstance(second, Busy) and second.lease == pytest.approx(first.lease)
    assert usage(worker) == (1, 100)
    # And once the owner answers, a later delivery gets that answer
    answered(worker, h, 0, first, "first")
    later = begin(other, h, owner="third")
    assert isinstance(later, Kept) and "answer of journey-1" in later.answer
    assert usage(worker) == (1, 42)
    assert [(r.outcome, r.tokens) for r in ledger(pool.client)] == [("ok", 42)]


def test_a_kept_answer_is_returned_before_the_deadline_or_the_breaker_are_asked(
    pool: SimulatedPool,
) -> None:
    # Given a request with a 5 s budget that Gemini answered
    worker = pool.worker()
    h = header(deadline_s=5.0)
    pool_route = worker.route(h)
    assert isinstance(pool_route, Routed)
    call = begin(worker, h, owner="owner")
    answered(worker, h, 0, call, "owner")
    # When its message comes back after a crash, past the deadline, with Gemini's breaker open
    pool.time.advance(60)
    pool.client.hset(
        "aipool:breaker:gemini:state",
        mapping={"state": "open", "opened_at": pool.time.now, "gen": 9},
    )
    again = begin(worker, h, owner="redelivery")
    # Then it gets the paid answer: not a deadline skip, not a second provider
    assert isinstance(again, Kept) and again.answer


def test_an_answer_no_longer_kept_is_never_taken_for_a_failure(pool: SimulatedPool) -> None:
    # Given an answered attempt whose kept answer has expired
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner")
    answered(worker, h, 0, call, "owner")
    pool.client.delete(f"{record_key(h.journey_id, 'gemini')}:answer")
    # When a very late duplicate arrives
    late = begin(worker, h, owner="late")
    # Then it is told the attempt was answered (no call, no next hop), and nothing changes
    assert isinstance(late, Kept) and late.answer == ""
    assert usage(worker) == (1, 42)
    assert [r.outcome for r in ledger(pool.client)] == ["ok"]


def test_the_sweep_never_abandons_a_live_lease(pool: SimulatedPool) -> None:
    # Given a call in flight with a 30 s bound (lease: bound + 10 s of grace)
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner", bound=30.0)
    assert call.lease == pytest.approx(pool.time.now + 40.0)
    # When the sweep runs while the lease is live
    pool.time.advance(39)
    assert worker.sweep() == 0
    # Then the call is still the owner's: it answers, charged once at its real usage
    assert isinstance(answered(worker, h, 0, call, "owner"), Recorded)
    assert usage(worker) == (1, 42)


def test_a_call_whose_worker_died_is_abandoned_billed_at_its_estimate(pool: SimulatedPool) -> None:
    # Given a call whose worker died (no outcome ever comes)
    worker = pool.worker()
    h = header(tokens=300)
    begin(worker, h, owner="dead")
    # When its lease is over and the sweep runs
    pool.time.advance(61)
    assert worker.sweep() == 1
    assert worker.sweep() == 0
    # Then the estimate stays charged (the provider may have billed it) and the ledger has it,
    # flagged estimated: quota and ledger agree
    assert usage(worker) == (1, 300)
    rows = ledger(pool.client)
    assert [(r.outcome, r.tokens, r.estimated) for r in rows] == [("abandoned", 300, True)]
    # And the message, redelivered, moves on to Claude without calling Gemini again
    again = begin(worker, h, owner="redelivery")
    assert isinstance(again, Ended) and again.state == "abandoned"
    assert again.decision.next == "claude"


def test_a_late_answer_after_abandonment_replaces_the_estimate(pool: SimulatedPool) -> None:
    # Given a call abandoned by the sweep (its worker stalled past its lease)
    worker = pool.worker()
    h = header(tokens=300)
    call = begin(worker, h, owner="slow")
    pool.time.advance(61)
    worker.sweep()
    # When the owner comes back with the answer after all
    assert isinstance(answered(worker, h, 0, call, "slow", tokens=42), Recorded)
    # Then the real usage replaces the estimate, and the answer is kept for any redelivery
    assert usage(worker) == (1, 42)
    assert [r.outcome for r in ledger(pool.client)] == ["abandoned", "ok"]
    assert isinstance(begin(worker, h, owner="again"), Kept)


def test_a_redelivered_failed_attempt_forwards_where_the_first_delivery_did(
    pool: SimulatedPool,
) -> None:
    # Given Gemini failed, and the request moved on to Claude
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner")
    first = failed(worker, h, 0, call, "owner")
    assert isinstance(first, Ended) and first.decision.next == "claude"
    # When Claude's breaker opens, and then the first message is redelivered (a crash before its ack)
    pool.client.hset(
        "aipool:breaker:claude:state",
        mapping={"state": "open", "opened_at": pool.time.now, "gen": 3},
    )
    again = begin(worker, h, owner="redelivery")
    # Then the redelivery forwards to the same hop: one branch of the request, never two
    assert isinstance(again, Ended)
    assert (again.state, again.code, again.decision) == ("failed", "server_error", first.decision)


def test_a_success_ends_a_run_of_failures_counted_while_it_ran(pool: SimulatedPool) -> None:
    # Given three calls a, b, c in flight at once
    worker = pool.worker()
    calls = {}
    for name in "abc":
        h = header(journey_id=f"journey-{name}")
        calls[name] = (h, begin(worker, h, owner=name))
    breaker = worker.breakers["gemini"]
    # When b and c fail, then a succeeds, then d fails
    for name in "bc":
        h, call = calls[name]
        failed(worker, h, 0, call, name)
    assert breaker.snapshot()["consecutive_failures"] == 2
    h, call = calls["a"]
    answered(worker, h, 0, call, "a")
    d = header(journey_id="journey-d")
    failed(worker, d, 0, begin(worker, d, owner="d"), "d")
    # Then the count is 1 (ADR-006 counts consecutive failures), and the breaker stays closed
    snapshot = breaker.snapshot()
    assert (snapshot["state"], snapshot["consecutive_failures"]) == ("closed", 1)


def test_a_timeout_the_deadline_made_short_counts_nothing_against_the_provider(
    pool: SimulatedPool,
) -> None:
    # Given three requests whose own deadline cut Gemini's calls short, each timing out
    worker = pool.worker()
    for i in range(3):
        h = header(journey_id=f"journey-{i}", deadline_s=0.4)
        worker.route(h)
        call = begin(worker, h, owner=f"o{i}")
        assert isinstance(call, Call) and call.limit_s == pytest.approx(0.4)
        # the runner's verdict for such a timeout (tests/aipool/attempt/test_runner.py)
        failed(worker, h, 0, call, f"o{i}", verdict="release", billed=True, code="timeout")
    # Then Gemini's breaker counted nothing: the next requests without a deadline still go there
    assert worker.breakers["gemini"].snapshot()["state"] == "closed"
    assert worker.breakers["gemini"].snapshot()["consecutive_failures"] == 0
    # And the calls, which may have been billed, are charged their estimate
    assert usage(worker) == (3, 300)


def test_a_task_id_reused_for_another_request_is_another_attempt(pool: SimulatedPool) -> None:
    # Given a request answered under task id "reused"
    worker = pool.worker()
    first = header(journey_id="digest-of-first", request_id="reused")
    call = begin(worker, first, owner="one")
    answered(worker, first, 0, call, "one")
    # When the producer reuses the id for another request (another journey id)
    second = header(journey_id="digest-of-second", request_id="reused")
    begun = begin(worker, second, owner="two")
    # Then it is a new call, and never receives the first request's answer
    assert isinstance(begun, Call)
    assert usage(worker)[0] == 2


def test_the_rpm_window_runs_on_the_pools_clock_whatever_a_worker_says(client: Any) -> None:
    # Given Gemini at rpm 10 and a worker whose clock is 90 s ahead of the others
    limits = {
        **settings().limits,
        "gemini": ProviderLimits(BreakerSettings(), QuotaLimits(rpm=10)),
    }
    pool = SimulatedPool(client, limits)
    right, ahead = pool.worker(), pool.worker(skew=90.0)
    # When they take turns at five calls a minute for three minutes
    refused = 0
    for i in range(15):
        worker = ahead if i % 2 else right
        h = header(journey_id=f"journey-{i}")
        if not isinstance(begin(worker, h, owner=f"o{i}"), Call):
            refused += 1
        pool.time.advance(12)
    # Then none is refused: the window is counted on one clock
    assert refused == 0


def test_a_deadline_counts_from_when_the_pool_first_saw_the_request(pool: SimulatedPool) -> None:
    # Given a producer whose clock is 10 s behind routes a request with a 5 s budget
    producer = pool.worker(skew=-10.0)
    h = header(deadline_s=5.0)
    routed = producer.route(h)
    # Then its budget starts at the pool's time, not the producer's
    assert routed.received == pytest.approx(pool.time.now)
    # And a worker 2 s later may call, for at most what is left of the budget
    pool.time.advance(2)
    call = begin(pool.worker(), h, owner="w")
    assert isinstance(call, Call) and call.limit_s == pytest.approx(3.0)


def test_a_message_forging_an_early_start_cannot_shorten_anothers_budget(
    pool: SimulatedPool,
) -> None:
    # Given a request routed by the pool (its route record says when it was first seen)
    worker = pool.worker()
    h = header(deadline_s=5.0)
    worker.route(h)
    # When a message of it claims it was received an hour earlier
    forged = header(deadline_s=5.0)
    forged = type(forged)(**{**forged.__dict__, "received": pool.time.now - 3600})
    call = begin(worker, forged, owner="w")
    # Then the route record decides: the call may go ahead
    assert isinstance(call, Call)


def test_a_free_provider_is_called_once_per_attempt_too(pool: SimulatedPool) -> None:
    # Given Ollama (no quota) answered an attempt
    worker = pool.worker()
    chain = (
        Hop("ollama", "llama3.2:3b"),
        Hop("gemini", "gemini-2.5-flash"),
        Hop("static", "static"),
    )
    h = header(chain=chain)
    call = begin(worker, h, owner="owner")
    assert isinstance(call, Call)
    answered(worker, h, 0, call, "owner")
    # When its message is redelivered
    again = begin(worker, h, owner="again")
    # Then the kept answer comes back: free does not mean "may run twice"
    assert isinstance(again, Kept) and again.answer


def test_a_skip_is_kept_so_every_delivery_forwards_alike(pool: SimulatedPool) -> None:
    # Given Gemini's breaker open when the hop arrives
    worker = pool.worker()
    pool.client.hset(
        "aipool:breaker:gemini:state",
        mapping={"state": "open", "opened_at": pool.time.now, "gen": 2},
    )
    h = header()
    first = begin(worker, h, owner="one")
    assert isinstance(first, Ended) and (first.state, first.code) == ("skipped", "circuit_open")
    assert first.decision.next == "claude"
    # When the breaker half-opens and the same message arrives again
    pool.time.advance(120)
    again = begin(worker, h, owner="two")
    # Then it is skipped the same way: the request does not split in two
    assert isinstance(again, Ended) and again.decision == first.decision
    assert usage(worker) == (0, 0)


def test_a_quota_refusal_frees_the_half_open_trial_slot(pool: SimulatedPool) -> None:
    # Given Gemini's breaker half-open-ready and its daily tokens nearly spent
    worker = pool.worker()
    pool.client.hset(
        "aipool:breaker:gemini:state",
        mapping={"state": "open", "opened_at": pool.time.now - 3600, "gen": 2},
    )
    limit = worker.quotas["gemini"].limits.daily_tokens or 0
    day = worker.quotas["gemini"].periods(pool.time.now)[0].label
    pool.client.hset(f"aipool:quota:gemini:day:{day}", mapping={"requests": 1, "tokens": limit})
    # When a call comes
    skipped = begin(worker, header(), owner="trial")
    # Then it is skipped for the quota, and the trial slot it took is free again
    assert isinstance(skipped, Ended) and skipped.code == "quota_exceeded"
    assert worker.breakers["gemini"].snapshot()["half_open_in_flight"] == 0
    assert worker.breakers["gemini"].snapshot()["state"] == BreakerState.HALF_OPEN.value


def test_every_reply_names_the_breaker_transition_it_caused_once(pool: SimulatedPool) -> None:
    # Given a listener on Gemini's breaker and as many failures in a row as open it
    seen: list[tuple[str, str, float | None]] = []
    worker = pool.worker()
    breaker = worker.breakers["gemini"]
    breaker.listeners = (lambda t: seen.append((t.old.value, t.new.value, t.tripped_at)),)
    threshold = breaker.settings.failure_threshold
    for i in range(threshold):
        h = header(journey_id=f"journey-{i}")
        failed(worker, h, 0, begin(worker, h, owner=f"o{i}"), f"o{i}")
    # Then the opening was heard once, naming the outage by when it began (on Redis's clock,
    # the time the breaker stored): its alert is known by it
    snapshot = breaker.snapshot()
    assert seen == [("closed", "open", snapshot["opened_at"])]
    assert snapshot["consecutive_failures"] == threshold


#: A chain starting at a free, unlimited provider: a request without a deadline may be sent
#: straight to its first hop, with no route record (HopRunner.dispatch).
STRAIGHT = (
    Hop("ollama", "llama3.2:3b"),
    Hop("gemini", "gemini-2.5-flash"),
    Hop("claude", "claude-sonnet-4-5"),
    Hop("static", "static"),
)


def test_a_copy_routed_after_its_first_hop_answered_goes_to_that_answer(
    pool: SimulatedPool,
) -> None:
    # Given a request sent straight to Ollama (no route record), answered there
    worker = pool.worker()
    h = header(chain=STRAIGHT)
    call = begin(worker, h, owner="straight")
    assert isinstance(call, Call)
    answered(worker, h, 0, call, "straight")
    # When Ollama's breaker opens, and a copy of the same message is routed by the pool
    pool.client.hset(
        "aipool:breaker:ollama:state",
        mapping={"state": "open", "opened_at": pool.time.now, "gen": 9},
    )
    routed = worker.route(h)
    # Then it goes where the first copy went, and gets that answer there: no second call
    assert isinstance(routed, Routed)
    assert (routed.decision.next, routed.decision.passed) == ("ollama", ())
    again = begin(worker, h, owner="copy")
    assert isinstance(again, Kept) and again.answer
    # And the route record now says so for every later copy
    assert worker.route(h).decision.next == "ollama"
    assert [(r.provider, r.outcome) for r in ledger(pool.client)] == [("ollama", "ok")]


def test_a_copy_routed_while_its_first_hop_is_called_waits_for_that_call(
    pool: SimulatedPool,
) -> None:
    # Given a request sent straight to Ollama whose call is in flight
    worker = pool.worker()
    h = header(chain=STRAIGHT)
    assert isinstance(begin(worker, h, owner="straight"), Call)
    # When Ollama's breaker opens and a copy is routed by the pool
    pool.client.hset(
        "aipool:breaker:ollama:state",
        mapping={"state": "open", "opened_at": pool.time.now, "gen": 9},
    )
    routed = worker.route(h)
    # Then the copy goes to the call in hand (busy), never to Gemini
    assert routed.decision.next == "ollama"
    assert isinstance(begin(worker, h, owner="copy"), Busy)


def test_a_message_sent_straight_delivered_after_a_routed_copy_answered_calls_no_one(
    pool: SimulatedPool,
) -> None:
    # Given a request sent straight to Ollama (no route record) while Ollama's breaker was
    # already open unknown to the producer, and a copy routed by the pool to Claude (Ollama and
    # Gemini open, no attempt at Ollama yet), answered there
    worker = pool.worker()
    h = header(chain=STRAIGHT)
    for provider in ("ollama", "gemini"):
        pool.client.hset(
            f"aipool:breaker:{provider}:state",
            mapping={"state": "open", "opened_at": pool.time.now, "gen": 9},
        )
    routed = worker.route(h)
    assert routed.decision.next == "claude"
    call = begin(worker, h, 2, owner="copy")
    assert isinstance(call, Call)
    answered(worker, h, 2, call, "copy")
    # When Ollama's breaker lets a trial through and the message sent straight arrives there
    pool.time.advance(61)
    late = begin(worker, h, 0, owner="straight")
    # Then it calls no one there: it follows the routed copy to Claude (found by the failover
    # model test, #42: it called Ollama a second time), where it finds the answer
    assert isinstance(late, Ended), late
    assert (late.state, late.code, late.decision.next) == ("skipped", "circuit_open", "claude")
    assert isinstance(begin(worker, h, 2, owner="straight"), Kept)
    assert [(r.provider, r.outcome) for r in ledger(pool.client)] == [("claude", "ok")]


def test_a_late_finish_after_redis_restarted_empty_books_its_call(pool: SimulatedPool) -> None:
    # Given a Gemini call in flight when Redis restarts with nothing on disk, and a second
    # delivery of the same message that then calls Gemini again
    worker = pool.worker()
    h = header()
    first = begin(worker, h, owner="first")
    assert isinstance(first, Call)
    pool.client.flushdb()
    second = begin(worker, h, owner="second")
    assert isinstance(second, Call)
    # When the first call answers (its record now the second delivery's), then the second
    late = answered(worker, h, 0, first, "first", tokens=40)
    again = answered(worker, h, 0, first, "first", tokens=40)  # its reply lost: retried
    answered(worker, h, 0, second, "second", tokens=42)
    # Then both calls are booked, each once, under its own call: two rows, two requests charged
    assert isinstance(late, Missing) and isinstance(again, Missing)
    rows = ledger(pool.client)
    assert sorted((r.call_id, r.outcome, r.tokens) for r in rows) == [
        ("first", "ok", 40),
        ("second", "ok", 42),
    ]
    assert usage(worker) == (2, 82)
    # And the second delivery's record is its own: a later delivery gets its answer
    assert isinstance(begin(worker, h, owner="third"), Kept)


def test_a_late_finish_after_the_restarts_second_call_ended_books_its_call(
    pool: SimulatedPool,
) -> None:
    # Given a Gemini call in flight when Redis restarts with nothing on disk, and a second
    # delivery that calls Gemini again and whose call answers first (found by #42's model test:
    # the first call's finish met an answered record and booked nothing)
    worker = pool.worker()
    h = header()
    first = begin(worker, h, owner="first")
    assert isinstance(first, Call)
    pool.client.flushdb()
    second = begin(worker, h, owner="second")
    assert isinstance(second, Call)
    answered(worker, h, 0, second, "second", tokens=42)
    # When the first call ends late, answered or failed, its reply lost and asked again
    late = failed(worker, h, 0, first, "first", billed=True)
    again = failed(worker, h, 0, first, "first", billed=True)
    # Then it is booked once under its own call, and the second's record stays answered
    assert isinstance(late, Missing) and isinstance(again, Missing)
    rows = ledger(pool.client)
    assert sorted((r.call_id, r.outcome, r.tokens) for r in rows) == [
        ("first", "error", h.tokens),
        ("second", "ok", 42),
    ]
    assert usage(worker) == (2, 42 + h.tokens)
    assert isinstance(begin(worker, h, owner="third"), Kept)


def test_a_begin_asked_again_by_its_delivery_is_the_same_call(pool: SimulatedPool) -> None:
    # Given a delivery whose begin ran (the call reserved) but whose reply was lost
    worker = pool.worker()
    h = header()
    first = begin(worker, h, owner="owner", bound=30.0)
    assert isinstance(first, Call)
    # When the same delivery asks again, 2 s later
    pool.time.advance(2)
    again = begin(worker, h, owner="owner", bound=30.0)
    # Then it is told the same call, with what is left of its bound, charged once
    assert isinstance(again, Call)
    assert (again.now, again.generation, again.lease) == (first.now, first.generation, first.lease)
    assert again.limit_s == pytest.approx(first.limit_s - 2)
    assert usage(worker) == (1, 100)
    # And another delivery is still told the call is in hand; the owner's answer is booked once
    assert isinstance(begin(worker, h, owner="other"), Busy)
    answered(worker, h, 0, again, "owner")
    assert [(r.outcome, r.tokens) for r in ledger(pool.client)] == [("ok", 42)]
    assert usage(worker) == (1, 42)


# -- the result written with the answer (#44) -------------------------------------------------


def _published(pubsub: Any) -> list[bytes]:
    """What the result's channel received since the last look (Celery's producer listens
    there)."""
    seen = []
    while (message := pubsub.get_message(timeout=0.2)) is not None:
        if message["type"] == "message":
            seen.append(message["data"])
    return seen


def test_finish_writes_the_answers_result_in_the_same_step(real_redis: Any) -> None:
    # Given a call to Gemini, and the producer listening on its result's channel
    pool = SimulatedPool(real_redis)
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner")
    write = result_write(h, "owner", records=(row(h, 1, "skipped", 0),))
    listening = real_redis.pubsub()
    listening.subscribe(write.key)
    _published(listening)
    # When the owner's answer is recorded with its result, and its reply is lost and it is
    # asked again
    first = answered(worker, h, 0, call, "owner", result=write)
    again = answered(worker, h, 0, call, "owner", result=write)
    # Then the result is Celery's meta with its expiry, published once; the answer's row and the
    # record riding with the result are in the spool once each
    assert isinstance(first, Recorded) and isinstance(again, Recorded)
    assert real_redis.get(write.key) == write.value.encode()
    assert 3590 < real_redis.ttl(write.key) <= 3600
    assert _published(listening) == [write.value.encode()]
    assert [(r.attempt, r.outcome) for r in ledger(real_redis)] == [(0, "ok"), (1, "skipped")]
    listening.close()


def test_a_late_answers_result_never_replaces_the_producers_success(pool: SimulatedPool) -> None:
    # Given a call abandoned by its worker, and the request answered meanwhile further down
    # the chain (its result written: a SUCCESS)
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner")
    pool.time.advance(call.lease - pool.time.now + 1)
    assert worker.sweep() == 1
    earlier = result_write(h, "the next hop")
    pool.client.set(earlier.key, earlier.value)
    # When the late answer is recorded with its result
    late = answered(worker, h, 0, call, "owner", result=result_write(h, "owner"))
    # Then the answer is kept and booked, and the producer's SUCCESS stays
    assert isinstance(late, Recorded)
    assert pool.client.get(earlier.key) == earlier.value.encode()
    assert ("ok", 42) in [(r.outcome, r.tokens) for r in ledger(pool.client)]


def test_a_finish_whose_record_redis_lost_still_writes_its_result(pool: SimulatedPool) -> None:
    # Given a call whose record Redis lost (restarted empty) while it ran
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner")
    pool.client.flushdb()
    write = result_write(h, "owner")
    # When its answer is recorded with its result
    reply = answered(worker, h, 0, call, "owner", result=write)
    # Then the call is booked and the answer, still this delivery's to give, is the result
    assert isinstance(reply, Missing)
    assert pool.client.get(write.key) == write.value.encode()
    assert [r.outcome for r in ledger(pool.client)] == ["ok"]


def test_a_failed_finish_writes_no_result(pool: SimulatedPool) -> None:
    # Given a call to Gemini that fails (the request goes on down the chain)
    worker = pool.worker()
    h = header()
    call = begin(worker, h, owner="owner")
    # When its failure is recorded
    failed(worker, h, 0, call, "owner")
    # Then no result is written: the next hop's answer will be
    assert pool.client.get(result_write(h, "owner").key) is None


def _stored_configs(pool: SimulatedPool) -> list[bytes]:
    return sorted(pool.client.keys(f"{CONFIG_PREFIX}*"))


def test_an_op_after_redis_restarted_empty_writes_the_hop_config_once_and_goes_on(
    pool: SimulatedPool,
) -> None:
    # Given a Gemini call begun by a worker whose op wrote the stored hop configuration
    worker, other = pool.worker(), pool.worker()
    h = header()
    first = begin(worker, h, owner="first")
    assert isinstance(first, Call)
    assert worker.configs.loads == 1 and len(_stored_configs(pool)) == 1
    # When Redis restarts empty (its scripts gone too) before the call's finish
    pool.client.flushdb()
    pool.client.script_flush()
    late = answered(worker, h, 0, first, "first")
    # Then the finish still books its call (its record gone: the table's restart row), after
    # writing the configuration once more
    assert isinstance(late, Missing)
    assert [(r.call_id, r.outcome) for r in ledger(pool.client)] == [("first", "ok")]
    assert usage(worker) == (1, 42)
    assert worker.configs.loads == 2
    # And the next op, another worker's, finds it: written once per Redis
    assert isinstance(begin(other, header(journey_id="journey-2"), owner="next"), Call)
    assert other.configs.loads == 0 and len(_stored_configs(pool)) == 1


def test_a_script_that_finds_no_hop_config_answers_config_and_changes_nothing(
    pool: SimulatedPool,
) -> None:
    # Given a Redis holding one attempt's call, and a configuration name it does not hold
    worker = pool.worker()
    h = header()
    assert isinstance(begin(worker, h, owner="first"), Call)
    before = {key: pool.client.dump(key) for key in pool.client.keys("*")}
    periods = worker.configs.periods(pool.time.now, "gemini")[2]
    args = [*header_args(BEGIN, pool.time.now, header(journey_id="j2"), 0, periods), "o", 30, "{}"]
    # When a begin names it (its hash evicted, or never written)
    raw = _SCRIPTS.for_client(pool.client)["attempt"](keys=[f"{CONFIG_PREFIX}gone"], args=args)
    # Then it answers config, and nothing in Redis changed
    assert isinstance(read_reply(raw)[0], ConfigMissing)
    assert {key: pool.client.dump(key) for key in pool.client.keys("*")} == before
