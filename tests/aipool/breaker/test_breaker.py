"""Breaker behaviour, the same over fakeredis and the real Redis."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from aipool.breaker import (
    Breaker,
    BreakerState,
    BreakerTransition,
    breakers_for,
    log_transition,
)
from aipool.errors import CircuitOpen
from aipool.providers.catalog import PROVIDERS
from aipool.settings.provider_limits import BreakerSettings

SETTINGS = BreakerSettings(failure_threshold=3, recovery_timeout=60.0, half_open_max_calls=2)


def make(client: Any, clock: Any, events: list[BreakerTransition] | None = None, **kw: Any):
    listeners = [events.append] if events is not None else []
    return Breaker(client, "gemini", SETTINGS, clock=clock, listeners=listeners, **kw)


def fail(breaker: Breaker, times: int) -> None:
    for _ in range(times):
        breaker.record_failure(breaker.acquire())


def open_breaker(breaker: Breaker) -> None:
    fail(breaker, SETTINGS.failure_threshold)
    assert breaker.snapshot()["state"] == "open"


def test_exactly_failure_threshold_failures_open_it(client, clock):
    # Given a closed breaker
    breaker = make(client, clock)
    # When one failure fewer than the threshold is recorded
    fail(breaker, SETTINGS.failure_threshold - 1)
    # Then it is still closed and admits calls
    assert breaker.snapshot()["state"] == "closed"
    assert breaker.snapshot()["consecutive_failures"] == SETTINGS.failure_threshold - 1
    permit = breaker.acquire()
    # When the threshold-th failure is recorded
    assert breaker.record_failure(permit) is True
    # Then it is open
    snap = breaker.snapshot()
    assert snap["state"] == "open"
    assert snap["opened_at"] == clock.now
    assert snap["retry_at"] == clock.now + SETTINGS.recovery_timeout


def test_a_success_in_closed_resets_the_consecutive_count(client, clock):
    # Given a breaker one failure away from opening
    breaker = make(client, clock)
    fail(breaker, SETTINGS.failure_threshold - 1)
    # When a call succeeds
    breaker.record_success(breaker.acquire())
    # Then the count restarts: threshold - 1 more failures leave it closed
    assert breaker.snapshot()["consecutive_failures"] == 0
    fail(breaker, SETTINGS.failure_threshold - 1)
    assert breaker.snapshot()["state"] == "closed"


def test_open_refuses_and_says_when_it_retries(client, clock):
    # Given an open breaker
    breaker = make(client, clock)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout - 1)
    # When a call asks for a permit inside the recovery window
    with pytest.raises(CircuitOpen) as refused:
        breaker.acquire()
    # Then it is refused with the time it retries, and the peek agrees
    assert "retries at" in str(refused.value)
    assert "in 1.0 s" in str(refused.value)
    # in the pool's zone, as a quota's refusal says when room returns (it said UTC)
    from datetime import datetime

    from aipool.periods import pool_zone

    offset = datetime.now(pool_zone()).isoformat()[-6:]
    assert f"{offset} (in 1.0 s)" in str(refused.value)
    assert breaker.is_open() is True


def test_is_open_turns_false_when_the_window_passes_without_taking_a_slot(client, clock):
    # Given an open breaker whose recovery window has passed
    breaker = make(client, clock)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    # When dispatch peeks, many times
    peeks = [breaker.is_open() for _ in range(5)]
    # Then it reads not-open, and every trial slot is still free
    assert peeks == [False] * 5
    permits = [breaker.acquire() for _ in range(SETTINGS.half_open_max_calls)]
    assert all(p.trial for p in permits)


def test_half_open_admits_at_most_half_open_max_calls(client, clock):
    # Given an open breaker whose recovery window has passed
    breaker = make(client, clock)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    # When more callers than trial slots ask
    admitted = [breaker.acquire() for _ in range(SETTINGS.half_open_max_calls)]
    with pytest.raises(CircuitOpen, match="trial slots are taken"):
        breaker.acquire()
    # Then exactly half_open_max_calls trials were admitted
    assert len(admitted) == SETTINGS.half_open_max_calls
    snap = breaker.snapshot()
    assert snap["state"] == "half_open"
    assert snap["half_open_in_flight"] == SETTINGS.half_open_max_calls


def test_the_first_trial_success_closes_it(client, clock):
    # Given a half-open breaker with two trials in flight
    events: list[BreakerTransition] = []
    breaker = make(client, clock, events)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    first, second = breaker.acquire(), breaker.acquire()
    # When the first trial succeeds
    assert breaker.record_success(first) is True
    # Then it is closed, and the other trial's late failure belongs to the finished round
    assert breaker.snapshot()["state"] == "closed"
    assert breaker.record_failure(second) is False
    assert breaker.snapshot() == {
        "state": "closed",
        "consecutive_failures": 0,
        "opened_at": None,
        "retry_at": None,
        "half_open_in_flight": 0,
        "paused_until": None,
    }
    assert [(e.old, e.new) for e in events][-1] == (BreakerState.HALF_OPEN, BreakerState.CLOSED)


def test_a_trial_failure_reopens_it_with_a_fresh_window(client, clock):
    # Given a half-open breaker with a trial in flight
    breaker = make(client, clock)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout + 5)
    trial = breaker.acquire()
    clock.advance(2)
    # When the trial fails
    assert breaker.record_failure(trial) is True
    # Then it is open again, counted from now
    snap = breaker.snapshot()
    assert snap["state"] == "open"
    assert snap["opened_at"] == clock.now
    assert snap["retry_at"] == clock.now + SETTINGS.recovery_timeout
    clock.advance(SETTINGS.recovery_timeout - 0.5)
    with pytest.raises(CircuitOpen):
        breaker.acquire()


def test_a_trial_slot_whose_holder_died_expires(client, clock):
    # Given every trial slot held by a worker that died and will never report back
    breaker = make(client, clock, trial_timeout=30.0)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    for _ in range(SETTINGS.half_open_max_calls):
        breaker.acquire()
    clock.advance(29.0)
    with pytest.raises(CircuitOpen):
        breaker.acquire()
    # When the trial timeout passes
    clock.advance(1.0)
    # Then the slots are free again and a new trial can close the breaker
    trial = breaker.acquire()
    assert trial.trial
    breaker.record_success(trial)
    assert breaker.snapshot()["state"] == "closed"


def test_a_rejection_released_does_not_trip_it(client, clock):
    # Given a closed breaker one failure away from opening
    breaker = make(client, clock)
    fail(breaker, SETTINGS.failure_threshold - 1)
    # When many calls end in 400-class rejections, handed back with release
    for _ in range(10):
        breaker.release(breaker.acquire())
    # Then nothing changed
    snap = breaker.snapshot()
    assert snap["state"] == "closed"
    assert snap["consecutive_failures"] == SETTINGS.failure_threshold - 1


def test_release_in_half_open_frees_the_slot_and_keeps_the_state(client, clock):
    # Given a half-open breaker with every trial slot taken
    breaker = make(client, clock)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    trials = [breaker.acquire() for _ in range(SETTINGS.half_open_max_calls)]
    # When one trial is released (its request was rejected, proving nothing)
    breaker.release(trials[0])
    # Then it stays half-open and exactly one slot is free again
    assert breaker.snapshot()["state"] == "half_open"
    assert breaker.snapshot()["half_open_in_flight"] == SETTINGS.half_open_max_calls - 1
    breaker.acquire()
    with pytest.raises(CircuitOpen):
        breaker.acquire()


def test_failures_reported_late_from_before_the_opening_do_not_count(client, clock):
    # Given calls admitted while closed, then the breaker opened and recovered
    breaker = make(client, clock)
    stragglers = [breaker.acquire() for _ in range(3)]
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    breaker.record_success(breaker.acquire())
    # When the old calls finally report failures
    counted = [breaker.record_failure(p) for p in stragglers]
    # Then they belong to an earlier episode and change nothing
    assert counted == [False, False, False]
    assert breaker.snapshot()["consecutive_failures"] == 0


def test_each_transition_is_one_event(client, clock):
    # Given a breaker with a listener
    events: list[BreakerTransition] = []
    breaker = make(client, clock, events)
    # When it opens, recovers to half-open, and closes, with extra refused calls in between
    open_breaker(breaker)
    for _ in range(3):
        with pytest.raises(CircuitOpen):
            breaker.acquire()
    clock.advance(SETTINGS.recovery_timeout)
    trials = [breaker.acquire() for _ in range(SETTINGS.half_open_max_calls)]
    breaker.record_success(trials[0])
    breaker.record_success(trials[1])
    # Then exactly three events, in order, with reasons and times
    assert [(e.provider, e.old, e.new, e.at) for e in events] == [
        ("gemini", BreakerState.CLOSED, BreakerState.OPEN, clock.now - SETTINGS.recovery_timeout),
        ("gemini", BreakerState.OPEN, BreakerState.HALF_OPEN, clock.now),
        ("gemini", BreakerState.HALF_OPEN, BreakerState.CLOSED, clock.now),
    ]
    assert events[0].reason == "3 consecutive failures"
    assert events[1].reason == "recovery timeout passed"
    assert events[2].reason == "trial call succeeded"


def test_every_transition_of_one_outage_names_when_it_began_and_a_lost_state_a_new_one(
    client, clock
):
    # Given a breaker with a listener, opened, reopened by a failed trial, then closed
    events: list[BreakerTransition] = []
    breaker = make(client, clock, events)
    began = clock.now
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    breaker.record_failure(breaker.acquire())
    clock.advance(SETTINGS.recovery_timeout)
    breaker.record_success(breaker.acquire())
    # Then the opening, the reopening and the closing all name the outage by when it began
    assert [
        (e.old, e.new, e.tripped_at) for e in events if e.new is not BreakerState.HALF_OPEN
    ] == [
        (BreakerState.CLOSED, BreakerState.OPEN, began),
        (BreakerState.HALF_OPEN, BreakerState.OPEN, began),
        (BreakerState.HALF_OPEN, BreakerState.CLOSED, began),
    ]
    # When Redis loses the breaker's state while it is open, and it opens again
    clock.advance(10)
    open_breaker(breaker)
    client.delete("aipool:breaker:gemini:state", "aipool:breaker:gemini:trials")
    clock.advance(10)
    events.clear()
    open_breaker(breaker)
    # Then that opening is another outage
    assert [(e.old, e.new, e.tripped_at) for e in events] == [
        (BreakerState.CLOSED, BreakerState.OPEN, clock.now)
    ]


def test_a_failing_listener_fails_neither_the_call_nor_the_others(client, clock, caplog):
    # Given a listener that raises, before one that records
    seen: list[BreakerTransition] = []

    def broken(event: BreakerTransition) -> None:
        raise RuntimeError("metrics backend down")

    breaker = Breaker(client, "gemini", SETTINGS, clock=clock, listeners=[broken, seen.append])
    # When the breaker opens
    with caplog.at_level(logging.ERROR, logger="aipool.breaker"):
        open_breaker(breaker)
    # Then the call returned normally, the second listener saw the event, the error was logged
    assert [e.new for e in seen] == [BreakerState.OPEN]
    assert "listener" in caplog.text
    assert "metrics backend down" in caplog.text


def test_the_logging_listener_warns_when_a_breaker_opens(client, clock, caplog):
    # Given a breaker with the logging listener
    breaker = Breaker(client, "claude", SETTINGS, clock=clock, listeners=[log_transition])
    # When it opens
    with caplog.at_level(logging.INFO, logger="aipool.breaker"):
        fail(breaker, SETTINGS.failure_threshold)
    # Then one warning on aipool.breaker names the provider, the states and the reason
    records = [r for r in caplog.records if r.name == "aipool.breaker"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].getMessage() == "breaker claude: closed -> open (3 consecutive failures)"


def test_breakers_are_per_provider(client, clock):
    # Given one breaker per provider from the configured limits
    breakers = breakers_for(client, clock=clock)
    assert set(breakers) == set(PROVIDERS)
    # When gemini's opens
    for _ in range(breakers["gemini"].settings.failure_threshold):
        breakers["gemini"].record_failure(breakers["gemini"].acquire())
    # Then the others still admit calls
    assert breakers["gemini"].is_open()
    assert not breakers["claude"].is_open()
    breakers["claude"].acquire()


def test_state_lives_under_the_provider_prefix(client, clock):
    # Given a breaker that opened and went half-open
    breaker = make(client, clock)
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    breaker.acquire()
    # Then its keys are the documented ones
    keys = sorted(k.decode() for k in client.keys("*"))
    assert keys == ["aipool:breaker:gemini:state", "aipool:breaker:gemini:trials"]


def test_the_logging_listener_warns_when_a_breaker_closes_again(client, clock, caplog):
    # Given an open breaker with the logging listener
    breaker = Breaker(client, "ollama", SETTINGS, clock=clock, listeners=[log_transition])
    open_breaker(breaker)
    clock.advance(SETTINGS.recovery_timeout)
    caplog.clear()
    # When its trial succeeds
    with caplog.at_level(logging.INFO, logger="aipool.breaker"):
        breaker.record_success(breaker.acquire())
    # Then the recovery is a warning, as the opening was (a worker logs at WARNING by default);
    # the half-open trial in between is information
    levels = [(r.getMessage(), r.levelname) for r in caplog.records if r.name == "aipool.breaker"]
    assert levels == [
        ("breaker ollama: open -> half_open (recovery timeout passed)", "INFO"),
        ("breaker ollama: half_open -> closed (trial call succeeded)", "WARNING"),
    ]
