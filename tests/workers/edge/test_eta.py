"""A message's ETA moved from the pool's clock onto the receiving worker's host clock (issue #42):
a worker ahead of Redis or behind it waits the delay its sender asked."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import fakeredis
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from aipool.attempt.clock import RedisClock, due_in
from workers.edge.eta import EtaOnHost


class _Host:
    """A host clock ``skew_s`` off the real one."""

    def __init__(self, skew_s: float) -> None:
        self.skew_s = skew_s

    def __call__(self) -> float:
        return time.time() + self.skew_s


class _Counting:
    """A Redis client that counts the times it is asked ``TIME``."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.asked = 0

    def time(self) -> Any:
        self.asked += 1
        return self.client.time()


@pytest.mark.parametrize(("sender_s", "receiver_s"), [(0, 60), (0, -60), (60, -60), (-60, 60)])
def test_a_receiver_off_redis_waits_the_delay_its_sender_asked(
    sender_s: float, receiver_s: float
) -> None:
    # Given a sender and a receiver whose host clocks are off Redis's (and each other's)
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    headers = {"eta": due_in(5.0, RedisClock(_Host(sender_s)), client).isoformat()}
    receiver = _Host(receiver_s)
    # When the receiving worker takes the message
    EtaOnHost(lambda: client, RedisClock(receiver))(headers)
    # Then the ETA Celery reads is 5 s after the receiver's own now (what its timer compares)
    waits = datetime.fromisoformat(headers["eta"]).timestamp() - receiver()
    assert waits == pytest.approx(5.0, abs=0.5)


def test_a_message_without_an_eta_or_with_a_naive_one_is_left_as_celery_reads_it() -> None:
    # Given a receiver a minute ahead of Redis
    client = _Counting(fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    on_host = EtaOnHost(lambda: client, RedisClock(_Host(60)))
    # When messages come without an ETA, with a naive one (Celery reads it in the app's zone)
    # and with one that is not a time (the edge's inspection refuses it)
    kept = [{}, {"eta": None}, {"eta": "2026-12-06T10:00:00"}, {"eta": "tomorrow"}]
    for headers in kept:
        on_host(headers)
    # Then their headers are unchanged, and Redis was not asked its time for them
    assert kept == [{}, {"eta": None}, {"eta": "2026-12-06T10:00:00"}, {"eta": "tomorrow"}]
    assert client.asked == 0


def test_the_receiver_asks_redis_its_time_at_most_once_per_interval() -> None:
    # Given a receiver that trusts Redis's last word for 30 s (monotonic time moved by hand)
    client = _Counting(fakeredis.FakeRedis(server=fakeredis.FakeServer()))
    moment = [0.0]
    on_host = EtaOnHost(lambda: client, RedisClock(), ask_every_s=30, monotonic=lambda: moment[0])
    eta = datetime.now(UTC).isoformat()
    # When three messages with an ETA arrive within 30 s, and a fourth after
    for at in (0.0, 1.0, 29.0, 31.0):
        moment[0] = at
        on_host({"eta": eta})
    # Then Redis was asked twice: for the first message, and once its word was 30 s old
    assert client.asked == 2


def test_a_redis_that_does_not_answer_leaves_the_eta_on_the_hosts_clock() -> None:
    # Given a receiver never told Redis's time, and a Redis that does not answer
    class Down:
        def time(self) -> Any:
            raise RedisConnectionError("down")

    eta = "2026-12-06T10:00:05+00:00"
    headers = {"eta": eta}
    # When a message with an ETA arrives
    EtaOnHost(Down, RedisClock(_Host(60)))(headers)
    # Then its ETA is read as Celery alone would read it
    assert headers == {"eta": eta}
