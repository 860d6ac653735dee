"""A message redelivered after its worker died is never a second paid call.

A pool process is SIGKILLed at the two points where at-least-once delivery bites: after a call
failed and before the next hop's message is published, and after a call answered and before the
message is acked. The broker gives the message back, another process runs the same attempt again,
and the provider must not be called twice for it; quota and ledger must equal the calls made.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.accounting import drained_rows, ledger_charges, quota_charges, trail
from tests.support.private_pool import PrivatePool, private_pool, send, settled

pytestmark = pytest.mark.integration
TIMEOUT = 60
# priority critical starts at Claude, a limited (paid) provider, then ollama, gemini, static.
CRITICAL = {"prompt": "Summarise the incident timeline", "priority": "critical"}
FLAG = "aipool:test:crashed"


@pytest.fixture()
def crash_worker(request, simulator, ledger_url) -> Iterator[PrivatePool]:  # type: ignore[no-untyped-def]
    """A worker on every queue (of its own database) whose pool process kills itself once at
    ``request.param``."""
    with private_pool(
        6, concurrency=1, AIPOOL_TEST_CRASH_AT=request.param, AIPOOL_TEST_CRASH_FLAG=FLAG
    ) as pool:
        yield pool


@pytest.mark.parametrize("crash_worker", ["ack"], indirect=True)
def test_a_paid_answer_redelivered_before_its_ack_is_not_bought_again(
    crash_worker, healthy, ledger_url
) -> None:  # type: ignore[no-untyped-def]
    # Given a pool process that dies after Claude answered and the result was stored, before ack
    # When a critical request goes through it
    answer = send(crash_worker, CRITICAL).get(timeout=TIMEOUT)
    settled(crash_worker, FLAG)
    redis_client = crash_worker.client
    # Then the producer has Claude's answer, and the redelivered message did not call Claude again
    assert (answer["status"], answer["provider"]) == ("ok", "claude")
    assert healthy.calls("claude") == 1
    # And the quota and the ledger hold that one call with its real tokens
    rows = drained_rows(redis_client, ledger_url, [answer["request_id"]])
    tokens = answer["usage"]["input_tokens"] + answer["usage"]["output_tokens"]
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "ok")]
    assert ledger_charges(rows)["claude"] == quota_charges(redis_client)["claude"]
    assert quota_charges(redis_client)["claude"].requests == 1
    assert quota_charges(redis_client)["claude"].tokens == tokens


@pytest.mark.parametrize("crash_worker", ["dispatch"], indirect=True)
def test_a_failed_call_redelivered_before_the_next_hop_is_not_made_again(
    crash_worker, healthy, ledger_url
) -> None:  # type: ignore[no-untyped-def]
    # Given Claude failing once, and a pool process that dies right after that failed call,
    # before the next hop's message is published
    healthy.set_fault("claude", "error_500", times=1)
    # When a critical request goes through it
    answer = send(crash_worker, CRITICAL).get(timeout=TIMEOUT)
    settled(crash_worker, FLAG)
    redis_client = crash_worker.client
    # Then the redelivered message moved on without calling Claude a second time
    assert healthy.calls("claude") == 1
    assert trail(answer)[0] == ("claude", "error")
    assert (answer["status"], answer["provider"]) == ("ok", "ollama")
    # And Claude was charged one request and no tokens, in the quota as in the ledger
    rows = drained_rows(redis_client, ledger_url, [answer["request_id"]])
    assert [(r.provider, r.outcome) for r in rows] == [("claude", "error"), ("ollama", "ok")]
    assert ledger_charges(rows)["claude"] == quota_charges(redis_client)["claude"]
    assert quota_charges(redis_client)["claude"].requests == 1
    assert quota_charges(redis_client)["claude"].tokens == 0
