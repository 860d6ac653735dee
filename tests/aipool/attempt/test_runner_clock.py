"""A fresh pool process whose host clock is off, before Redis ever told it the time (issue #42's
suspected case): the lanes' waits, and a call's share of the deadline, are weighed on Redis's
clock."""

from __future__ import annotations

import time
from decimal import Decimal

import fakeredis

from aipool.attempt.clock import RedisClock
from aipool.attempt.identity import journey_id
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.runner import HopRunner
from aipool.attempt.visit import Done, Forward
from aipool.breaker import breakers_for
from aipool.contract.completion import Completion
from aipool.contract.journey import Journey
from aipool.contract.request import Request, parse_request
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


class Timed:
    """A provider that answers at once and keeps the time each call was given."""

    def __init__(self) -> None:
        self.given: list[float | None] = []

    def complete(
        self,
        request: Request,
        model: str,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        self.given.append(timeout_s)
        return Completion(text="an answer", model=model, input_tokens=12, output_tokens=30)

    def close(self) -> None:
        return None


def test_a_fresh_process_ahead_of_redis_gives_the_last_provider_what_the_deadline_leaves() -> None:
    # Given a new process whose host clock is 90 s ahead, never told Redis's time yet, and a
    # request with a 10 s deadline the pool first saw 1 s ago, at its last provider (Claude)
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    book = AttemptBook(
        client,
        breakers_for(client),
        quotas_for(client),
        clock=RedisClock(lambda: time.time() + 90),
    )
    claude = Timed()
    runner = HopRunner(
        book,
        observers=[],
        pricing=lambda *_: Decimal("0.01"),
        providers=lambda _: claude,
        timeouts=lambda _: 30.0,
    )
    raw = {"prompt": "What is a pod?", "deadline_s": 10}
    seconds, micros = client.time()
    seen = seconds + micros / 1e6 - 1
    journey = Journey(route=ROUTE, position=1, received_at=seen, id=journey_id("req-ahead", raw))
    # When its worker runs the hop
    step = runner.run(parse_request(raw), "req-ahead", journey)
    # Then Claude is called with about the 9 s the deadline leaves on Redis's clock (the share
    # on the host's clock said nothing was left: the call was begun, and charged, with 0 s)
    assert isinstance(step, Done)
    assert len(claude.given) == 1 and claude.given[0] is not None
    assert 8.0 <= claude.given[0] <= 9.0 + 1e-6, claude.given
