"""Providers that misbehave, end to end through a real worker: each request gets a contract result.

Each provider in turn answers its hop with a fault: 429 with ``Retry-After``, its "overloaded"
status (529 for Claude), a hang past the client timeout, a body cut short, no usage, negative or
absurd usage, tool-call arguments that do not parse. The request moves on to the next hop (or is
answered), the worker lives on, and an answer the pool refused as broken is charged nothing: its
ledger row has no tokens and no cost, and the quota counters equal the ledger. An OpenAI-compatible
answer whose tool arguments are not JSON is the model's slip, not a broken answer: the provider
billed it, and it is booked as the provider reported.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from sqlalchemy import Engine

from aipool.simulator import Simulator
from tests.support.accounting import (
    drain_everything,
    ledger_charges,
    ledger_rows,
    quota_charges,
    rows_trail,
    trail,
)
from tests.support.pool import Worker
from tests.support.requests import CRITICAL, QUESTION, TOOL_QUESTION

pytestmark = pytest.mark.integration
TIMEOUT = 30

#: The request whose first model call goes to each provider, and the faults that put it there.
FIRST_CALL_AT: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "ollama": (QUESTION, {}),
    "gemini": (QUESTION, {"ollama": "down"}),
    "claude": (CRITICAL, {}),
    "nemotron": (TOOL_QUESTION, {}),
}
#: The same for a request carrying tools (Ollama takes none).
TOOL_CALL_AT: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "nemotron": (TOOL_QUESTION, {}),
    "gemini": (TOOL_QUESTION, {"nemotron": "down"}),
    "claude": ({**TOOL_QUESTION, "priority": "critical"}, {}),
}

#: (id, simulator fault kind, its options); all of them make the pool refuse the answer, except
#: ``no-usage``, which the pool may accept: a paid call is then charged an estimate, never zero.
FAULTS: list[tuple[str, str, dict[str, Any]]] = [
    ("429-retry-after", "rate_limit", {"retry_after": 30}),
    ("overloaded-529", "overloaded", {}),
    ("hang", "hang", {"seconds": 30}),
    ("body-cut-short", "malformed", {"body": "json"}),
    ("no-usage", "no_usage", {}),
    ("negative-usage", "bad_usage", {"output_tokens": -5}),
    ("absurd-input-usage", "bad_usage", {"input_tokens": 10**12}),
    ("absurd-output-usage", "bad_usage", {"output_tokens": 10**6}),
]
MAY_ANSWER = {"no_usage"}
#: A call that timed out may have been finished, and billed, by the provider after the pool
#: stopped waiting: it is charged the estimate its reservation made, flagged estimated.
MAY_BE_BILLED = {"hang"}
#: Answers the provider billed that the pool cannot use: booked with the tokens it reported.
BILLED_AS_REPORTED = {("nemotron", "bad_tool_args")}

CASES = [
    pytest.param(provider, kind, options, FIRST_CALL_AT[provider], id=f"{provider}-{name}")
    for name, kind, options in FAULTS
    for provider in FIRST_CALL_AT
] + [
    pytest.param(
        provider, "bad_tool_args", {}, TOOL_CALL_AT[provider], id=f"{provider}-bad-tool-args"
    )
    for provider in TOOL_CALL_AT
]


@pytest.mark.parametrize(("provider", "kind", "options", "setup"), CASES)
def test_a_misbehaving_provider_is_charged_only_what_it_may_have_billed_and_the_request_gets_a_contract_result(
    provider: str,
    kind: str,
    options: dict[str, Any],
    setup: tuple[dict[str, Any], dict[str, str]],
    providers: Simulator,
    clean_redis: redis.Redis,
    celery_app: Any,
    pool: Worker,
    ledger: Engine,
) -> None:
    # Given the provider that takes the request's first call answering with the fault
    request, before = setup
    for other, fault in before.items():
        providers.set_fault(other, fault)
    providers.set_fault(provider, kind, **options)
    # When a producer sends the request through the pool
    result = celery_app.send_task("ai.generate", kwargs={"request": request}, queue="router")
    answer = result.get(timeout=TIMEOUT)
    # Then it gets a contract result, and the provider was called
    assert answer["status"] in ("ok", "fallback", "refused"), answer
    assert answer["request_id"] == result.id
    assert providers.calls(provider) >= 1
    attempt = next(a for a in answer["attempts"] if a["provider"] == provider)
    if kind not in MAY_ANSWER:
        # And an answer the pool could not trust moved the request on
        assert attempt["outcome"] == "error", answer["attempts"]
        assert answer["provider"] != provider
        assert answer["status"] == "ok"
    if answer["provider"] == provider:
        assert answer["usage"]["input_tokens"] > 0 and answer["usage"]["output_tokens"] > 0
    # And the ledger has one row per attempt; a refused answer is charged no token and no cost,
    # a timed-out call its estimate; the quota counters say what the ledger says
    drained = drain_everything(clean_redis, ledger)
    assert drained.dead == 0
    rows = ledger_rows(ledger, [result.id])
    assert rows_trail(rows, result.id) == trail(answer)
    for row in rows:
        if row.outcome != "ok" and kind in MAY_BE_BILLED and row.provider == provider:
            assert row.estimated and row.input_tokens > 0 and row.output_tokens > 0, row
        elif (
            row.outcome != "ok"
            and row.provider == provider
            and (provider, kind) in BILLED_AS_REPORTED
        ):
            assert not row.estimated and row.input_tokens > 0 and row.output_tokens > 0, row
        elif row.outcome != "ok":
            assert (row.input_tokens, row.output_tokens, row.cost_usd) == (0, 0, 0), row
    assert quota_charges(clean_redis) == ledger_charges(rows)
    # And the worker lives on
    assert pool.alive()
