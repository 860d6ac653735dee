"""A fresh pool process whose host clock is off, before Redis ever told it the time (issue #42's
suspected case): the lanes' waits are weighed against the deadline on Redis's clock."""

from __future__ import annotations

import time
from decimal import Decimal

import fakeredis

from aipool.attempt.clock import RedisClock
from aipool.attempt.identity import journey_id
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.runner import HopRunner
from aipool.attempt.visit import Forward
from aipool.breaker import breakers_for
from aipool.contract.request import parse_request
from aipool.contract.route import Hop, Route
from aipool.quota import quotas_for

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


def test_a_fresh_process_90_s_ahead_does_not_pass_over_a_lane_whose_wait_fits_the_deadline() -> (
    None
):
    # Given a new process whose host clock is 90 s ahead, never told Redis's time yet, and
    # Gemini's urgent lane holding a request that has waited 3 s
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    book = AttemptBook(
        client,
        breakers_for(client),
        quotas_for(client),
        clock=RedisClock(lambda: time.time() + 90),
    )
    runner = HopRunner(
        book, observers=[], pricing=lambda *_: Decimal("0.01"), providers=lambda _: None
    )
    runner.lane_waits = lambda lanes: {"gemini.urgent": 3.0, "claude.urgent": 0.0}
    raw = {"prompt": "What is a pod?", "deadline_s": 10}
    seconds, micros = client.time()
    seen = seconds + micros / 1e6 - 1  # the pool first saw it waiting 1 s ago, on Redis's clock
    # When the router takes it: 9 s of its deadline left, against a 3 s wait
    step = runner.start(
        parse_request(raw), "req-fresh", journey_id("req-fresh", raw), ROUTE, seen_at=seen
    )
    # Then Gemini's lane takes it: nothing is passed over as queue_wait
    assert isinstance(step, Forward)
    assert [a.outcome for a in step.journey.attempts] == []
    assert step.queue == "gemini.urgent"
