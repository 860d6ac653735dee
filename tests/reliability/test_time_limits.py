"""Issue #42, case 5: timeouts have one owner, the pool's settings.

Gemini healthy but answering in 4 s, five requests sent with Celery's ``soft_time_limit=2``: the
producer's limit used to ride along to every hop (``tasks/generate.py`` carried it), fire inside
Gemini's call, and be booked as Gemini's timeout: five failures, its breaker open. Now every hop
runs under the pool's own limits (``AIPOOL_TASK_SOFT_TIME_LIMIT``/``AIPOOL_TASK_TIME_LIMIT``), so a
producer's limit cannot shorten a provider's call below its timeout.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aipool.simulator import Simulator
from tests.support.accounting import trail
from tests.support.private_pool import PrivatePool, private_pool, send
from tests.support.requests import CLOUD_TRIAGE

pytestmark = pytest.mark.integration
TIMEOUT = 60
AT_GEMINI = {"prompt": CLOUD_TRIAGE, "user_id": "reliability"}


@pytest.fixture()
def patient(simulator: Simulator, ledger_url: str) -> Iterator[PrivatePool]:
    """A worker whose Gemini calls may take 10 s (the suite's default is 2 s), under the pool's
    default limits (soft 90 s, hard 120 s)."""
    with private_pool(14, DATABASE_URL=ledger_url, AIPOOL_TIMEOUT_GEMINI="10") as pool:
        yield pool


def test_a_producers_soft_time_limit_never_opens_a_healthy_providers_breaker(
    providers: Simulator, patient: PrivatePool
) -> None:
    # Given Gemini healthy but answering in 4 s
    providers.set_fault("gemini", "slow", ms=4000)
    # When five requests that start at Gemini are sent with a soft time limit of 2 s
    sent = [send(patient, AT_GEMINI, soft_time_limit=2) for _ in range(5)]
    answers = [result.get(timeout=TIMEOUT) for result in sent]
    # Then Gemini answers each of them: the producer's limit did not cut its calls
    assert [(a["status"], a["provider"]) for a in answers] == [("ok", "gemini")] * 5, [
        trail(a) for a in answers
    ]
    # And its breaker is closed: the next request is Gemini's too, no hop passed over
    providers.heal("gemini")
    answer = send(patient, AT_GEMINI).get(timeout=TIMEOUT)
    assert trail(answer) == [("gemini", "ok")], answer
