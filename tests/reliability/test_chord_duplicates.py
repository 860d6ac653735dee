"""Issue #42, suspected: a duplicate that later receives the kept answer returns it a second time
into a chord.

A chord's body runs once its header's tasks have each reported a result (Celery's Redis backend
counts the reports). A chord member's message published twice (a producer's retry after a lost
publish confirm) is one call: the second copy waits for the first and then gets the kept answer.
If both copies report, the count reaches the header's size before the last member has answered,
and the body runs with one answer twice and another missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from celery import chord
from celery.signals import before_task_publish

from aipool.simulator import Simulator
from tests.support.private_pool import PrivatePool, private_pool
from tests.support.requests import CLOUD_TRIAGE, CRITICAL

pytestmark = pytest.mark.integration
TIMEOUT = 90
#: A request that starts at Gemini (a second chord member, slower than the duplicated one).
AT_GEMINI = {"prompt": CLOUD_TRIAGE, "user_id": "reliability"}
HOPS_KEY = "aipool:test:hops"


@pytest.fixture()
def chorded(simulator: Simulator, ledger_url: str) -> Iterator[PrivatePool]:
    """A worker of the instrumented app (``tests.collect``) whose Gemini calls may take 15 s."""
    with private_pool(
        15,
        concurrency=3,
        DATABASE_URL=ledger_url,
        AIPOOL_TIMEOUT_GEMINI="15",
        AIPOOL_CLAUDE_RPM="unlimited",
        AIPOOL_TEST_HOPS_KEY=HOPS_KEY,
    ) as pool:
        yield pool


def test_a_duplicated_chord_member_reports_its_answer_once(
    providers: Simulator, chorded: PrivatePool
) -> None:
    # Given a chord of two requests: one Claude answers in 1 s, one Gemini answers in 12 s
    pool = chorded
    providers.set_fault("claude", "slow", ms=1000)
    providers.set_fault("gemini", "slow", ms=12000)
    published: list[tuple[dict[str, Any], Any]] = []

    def seen(sender: str | None = None, headers: Any = None, body: Any = None, **_: Any) -> None:
        if sender == "ai.generate" and headers and headers.get("group"):
            published.append((dict(headers), body))

    before_task_publish.connect(seen, weak=False)
    try:
        members = [
            pool.app.signature("ai.generate", kwargs={"request": r}, queue="router")
            for r in (CRITICAL, AT_GEMINI)
        ]
        collected = chord(members)(pool.app.signature("tests.collect", queue="router"))
    finally:
        before_task_publish.disconnect(seen)
    # When the Claude member's message is published a second time under its task id (a
    # producer's retry), with the same chord
    headers, body = next(p for p in published if p[1][1]["request"] == CRITICAL)
    pool.app.send_task(
        "ai.generate",
        kwargs=body[1],
        queue="router",
        task_id=headers["id"],
        group_id=headers["group"],
        group_index=headers.get("group_index"),
        chord=body[2]["chord"],
    )
    results = collected.get(timeout=TIMEOUT)
    # Then the body gets each member's answer once: Claude's and Gemini's, Claude called once
    assert sorted(r["provider"] for r in results) == ["claude", "gemini"], [
        (r["request_id"], r.get("provider")) for r in results
    ]
    assert providers.calls("claude") == 1
    # And the duplicate did reach Claude's queue and end there (with the kept answer: the one
    # call was the first copy's), so both copies reported the same task id to the chord
    hops = [json.loads(h) for h in pool.client.lrange(HOPS_KEY, 0, -1)]
    at_claude = [h for h in hops if "claude" in (h["queue"] or "")]
    assert len(at_claude) >= 2, hops
