"""The cache in front of the hop runner: when a request waits for an identical one's answer,
and for how long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aipool.attempt.visit import Forward
from aipool.cache.front import RECHECK_MAX_S, RECHECK_MIN_S, CacheFront, Recheck
from aipool.cache.store import Lead, Wait
from aipool.contract.journey import Journey
from aipool.contract.request import parse_request
from aipool.routing.router import decide
from tests.support.cache import SECRET, cached_routes


class _Runner:
    """A hop runner that forwards every request to its first provider, at a clock of 1000 s."""

    def __init__(self) -> None:
        self.observers: list[Any] = []

    def now(self) -> float:
        return 1000.0

    def reused(self, request_id: str, journey_id: str) -> Any:
        return None  # every task id is its request's own

    def dispatch(self, request: Any, request_id: str, journey_id: str, route: Any, **_: Any) -> Any:
        return Forward(route.first.provider, Journey(route=route, id=journey_id))


class _Store:
    def __init__(self, found: Any) -> None:
        self.found = found

    def lookup(self, name: str, journey_id: str) -> Any:
        return self.found


@pytest.fixture(autouse=True)
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(cached_routes(tmp_path)))
    monkeypatch.setenv("AIPOOL_CACHE_SECRET", SECRET)


def _dispatch(found: Any, request: dict[str, Any], seen: float | None = None) -> Any:
    parsed = parse_request(request)
    front = CacheFront(_Runner(), lambda: _Store(found))  # type: ignore[arg-type, return-value]
    return front.dispatch(parsed, "r-1", "j-1", decide(parsed), seen_at=lambda: seen)


QUESTION = {"prompt": "What is a pod?", "service": "faq"}


def test_a_follower_looks_again_after_half_the_leads_age_within_bounds() -> None:
    assert _dispatch(Wait(held_s=0.6, left_s=29), QUESTION) == Recheck("router", 0.3)
    assert _dispatch(Wait(held_s=0.0, left_s=29), QUESTION).delay_s == RECHECK_MIN_S
    assert _dispatch(Wait(held_s=20, left_s=10), QUESTION).delay_s == RECHECK_MAX_S
    # never past the lead's end: then it leads itself
    assert _dispatch(Wait(held_s=20, left_s=0.2), QUESTION).delay_s == pytest.approx(0.21)


def test_an_urgent_follower_waits_in_the_urgent_lane() -> None:
    urgent = {**QUESTION, "deadline_s": 30}
    assert _dispatch(Wait(held_s=0.6, left_s=29), urgent, seen=999.0).queue == "router.urgent"


def test_a_follower_waits_no_longer_than_its_deadline_leaves() -> None:
    # Given a follower whose deadline of 2 s has 0.2 s left (the pool saw it 1.8 s ago)
    late = {**QUESTION, "deadline_s": 2}
    step = _dispatch(Wait(held_s=1.0, left_s=29), late, seen=998.2)
    # Then it does not wait: it is dispatched as without a cache
    assert isinstance(step, Forward) and step.queue == "gemini"


def test_the_leader_is_dispatched_as_without_a_cache() -> None:
    step = _dispatch(Lead(), QUESTION)
    assert isinstance(step, Forward) and step.queue == "gemini"
