"""The hop runner over the real attempt script (fakeredis): what a producer gets when Redis fails,
when a message is redelivered, and what an attempt's error may say."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import fakeredis
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from aipool.attempt import result_write, timing
from aipool.attempt.clock import RedisClock
from aipool.attempt.event import AttemptEvent
from aipool.attempt.identity import journey_id
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.result_write import ResultWrite
from aipool.attempt.runner import HopRunner
from aipool.attempt.visit import Done, Drop, Forward
from aipool.breaker import breakers_for
from aipool.contract.completion import Completion
from aipool.contract.journey import Journey
from aipool.contract.request import Request, parse_request
from aipool.contract.route import Hop, Route
from aipool.errors import (
    ContentBlocked,
    ModelRefused,
    PromptBlocked,
    ProviderRateLimited,
    ProviderServerError,
    ProviderTimeout,
)
from aipool.ledger.summary import failure_reason as failed_reason
from aipool.quota import quotas_for
from tests.support.attempts import ledger
from tests.support.guards import Clock

RAW = {"prompt": "What is a pod?"}
REQUEST = parse_request(RAW)
JOURNEY_ID = journey_id("req-1", RAW)
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


class Provider:
    """A provider that answers, or raises ``error``, and counts its calls; with ``hang``, every
    call hangs far past any bound (its SDK's reads never end) until the bound cuts it."""

    def __init__(self, error: Exception | None = None, hang: bool = False) -> None:
        self.error = error
        self.hang = hang
        self.calls = 0
        #: The thinking budget each call was given.
        self.budgets: list[int | None] = []
        #: The time bound each call was given.
        self.limits: list[float | None] = []

    def complete(
        self,
        request: Request,
        model: str,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        self.calls += 1
        self.budgets.append(thinking_budget)
        self.limits.append(timeout_s)
        if self.hang:
            time.sleep(60)
            raise AssertionError("the call was not cut at its bound")
        if self.error is not None:
            raise self.error
        return Completion(text="an answer", model=model, input_tokens=12, output_tokens=30)

    def close(self) -> None:
        return None


class FlakyRedis(fakeredis.FakeRedis):
    """A Redis that goes away (every command, pipelines included) once ``down`` is set."""

    down = False

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise RedisConnectionError("Redis went away")
        return super().execute_command(*args, **kwargs)

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise RedisConnectionError("Redis went away")
        return super().pipeline(*args, **kwargs)


@pytest.fixture()
def redis_client() -> FlakyRedis:
    return FlakyRedis(server=fakeredis.FakeServer())


def _runner(
    client: Any,
    providers: dict[str, Provider],
    events: list[AttemptEvent],
    finish_retry_s: float = 0.5,
) -> HopRunner:
    book = AttemptBook(client, breakers_for(client), quotas_for(client))
    lookup: Callable[[str], Any] = lambda name: providers.get(name) or Provider()  # noqa: E731
    return HopRunner(
        book,
        observers=[events.append],
        pricing=lambda *_: Decimal("0.01"),
        providers=lookup,
        finish_retry_s=finish_retry_s,
    )


def _run(runner: HopRunner, position: int = 0) -> Done | Forward:
    return runner.run(REQUEST, "req-1", Journey(route=ROUTE, position=position, id=JOURNEY_ID))


def _lose_redis_once_answered(provider: Provider, redis_client: FlakyRedis) -> None:
    """Redis goes away once ``provider`` has answered (before its answer is recorded)."""
    original = provider.complete

    def answer_then_lose_redis(*args: Any, **kwargs: Any) -> Completion:
        redis_client.down = True
        return original(*args, **kwargs)

    provider.complete = answer_then_lose_redis  # type: ignore[method-assign]


def test_a_paid_answer_reaches_the_producer_when_redis_fails_while_charging_it(
    redis_client: FlakyRedis,
) -> None:
    # Given gemini answering, and Redis going away once the call is admitted
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    _lose_redis_once_answered(gemini, redis_client)
    # When the hop runs
    step = _run(runner)
    # Then the producer gets the paid answer with its cost, and the ledger observer saw it
    assert isinstance(step, Done)
    assert (step.result["status"], step.result["provider"]) == ("ok", "gemini")
    assert step.result["cost_usd"] == pytest.approx(0.01)
    assert [(e.hop.provider, e.attempt.outcome) for e in events] == [("gemini", "ok")]
    assert events[0].completion is not None and events[0].completion.output_tokens == 30


def test_guards_that_cannot_be_read_skip_the_provider_instead_of_failing(
    redis_client: FlakyRedis,
) -> None:
    # Given Redis down before the hop asks its guards
    gemini, claude, events = Provider(), Provider(), []
    runner = _runner(redis_client, {"gemini": gemini, "claude": claude}, events)
    redis_client.down = True
    # When the hop runs
    step = _run(runner)
    # Then no provider is called unguarded, and the request still gets its terminal answer
    assert gemini.calls == claude.calls == 0
    assert isinstance(step, Done)
    assert step.result["status"] == "fallback"
    assert [a["outcome"] for a in step.result["attempts"]][:2] == [
        "guard_unavailable",
        "guard_unavailable",
    ]


def test_a_redelivered_answered_attempt_returns_the_same_answer_without_calling(
    redis_client: FlakyRedis,
) -> None:
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    first = _run(runner)
    # When the same message (request id, position) runs again, as after a crash before the ack
    again = _run(runner)
    # Then gemini was called once, and both deliveries give the same answer
    assert gemini.calls == 1
    assert isinstance(first, Done) and isinstance(again, Done)
    assert again.result["content"] == first.result["content"]
    assert again.result["usage"] == first.result["usage"]
    # And the quota holds one request with the real tokens
    usage = quotas_for(redis_client)["gemini"].usage()
    assert usage["daily_requests"]["used"] == 1
    assert usage["daily_tokens"]["used"] == 42


def test_a_redelivered_failed_attempt_moves_on_without_calling_again(
    redis_client: FlakyRedis,
) -> None:
    gemini, events = Provider(ProviderServerError("gemini HTTP 500")), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    first = _run(runner)
    again = _run(runner)
    assert gemini.calls == 1
    assert isinstance(first, Forward) and isinstance(again, Forward)
    assert again.queue == first.queue == "claude"
    # And the failed call (a 500: not billed) counts as one request, with its tokens back
    usage = quotas_for(redis_client)["gemini"].usage()
    assert (usage["daily_requests"]["used"], usage["daily_tokens"]["used"]) == (1, 0)


def test_an_error_echoing_the_api_key_is_scrubbed_from_the_attempts(
    redis_client: FlakyRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aipool.scrub import forget_configured_secrets

    planted = "planted-gemini-key-5f1c9a7e"
    monkeypatch.setenv("GEMINI_API_KEY", planted)
    forget_configured_secrets()
    gemini = Provider(ProviderServerError(f"gemini HTTP 500: invalid credential {planted}"))
    step = _run(_runner(redis_client, {"gemini": gemini}, []))
    assert isinstance(step, Forward)
    errors = [a.error or "" for a in step.journey.attempts]
    assert errors and all(planted not in e for e in errors)
    assert errors[0].startswith("server_error: gemini HTTP 500")
    forget_configured_secrets()


def test_an_error_quoting_the_prompt_keeps_no_quote_in_the_attempts(
    redis_client: FlakyRedis,
) -> None:
    # Given a provider whose error repeats the request it refused (REQUEST asks "What is a pod?")
    gemini = Provider(ProviderServerError("gemini HTTP 500: cannot answer 'What is a pod?'"))
    # When the hop fails over
    step = _run(_runner(redis_client, {"gemini": gemini}, []))
    # Then the attempt's error, stored in the result, the ledger and the log, says what failed
    # without the prompt
    assert isinstance(step, Forward)
    (failed,) = step.journey.attempts
    assert failed.error == "server_error: gemini HTTP 500: cannot answer '[prompt text]'"


def test_a_prompt_that_names_the_failure_keeps_the_failures_code_in_the_attempts(
    redis_client: FlakyRedis,
) -> None:
    # Given an alert-triage prompt quoting the pool's own words ("server_error: gemini HTTP
    # 500"), and Gemini failing with that very error
    prompt = "Our logs say server_error: gemini HTTP 500 on every checkout, why?"
    request = parse_request({"prompt": prompt})
    gemini = Provider(ProviderServerError("gemini HTTP 500: upstream failed"))
    runner = _runner(redis_client, {"gemini": gemini}, [])
    # When the hop fails over
    step = runner.run(request, "req-2", Journey(route=ROUTE, position=0, id=JOURNEY_ID))
    # Then the provider's words that the prompt holds are cut, but the pool's code stays the
    # prefix that reports, status and the daily report count the failure under
    assert isinstance(step, Forward)
    (failed,) = step.journey.attempts
    assert failed.error is not None and failed.error.startswith("server_error: ")
    assert failed_reason(failed.error) == "server_error"
    assert "gemini HTTP 500" not in failed.error and "[prompt text]" in failed.error


def test_a_prompt_longer_than_a_models_window_skips_it_before_any_call(
    redis_client: FlakyRedis,
) -> None:
    # Given a route starting at Ollama (an 8,192-token window in the route table) and a prompt of
    # about 12,000 tokens
    ollama, events = Provider(), []
    runner = _runner(redis_client, {"ollama": ollama}, events)
    raw = {"prompt": "word " * 12_000}
    route = Route(
        intent="SUMMARY",
        complexity=3,
        chain=(Hop("ollama", "llama3.2:3b"), *ROUTE.chain),
        reason="test",
    )
    # When the request is routed
    step = runner.start(parse_request(raw), "req-long", journey_id("req-long", raw), route)
    # Then Ollama is passed over without a call, saying why in numbers, and Gemini takes it
    assert isinstance(step, Forward) and step.queue == "gemini"
    (skipped,) = step.journey.attempts
    assert (skipped.provider, skipped.outcome) == ("ollama", "context_too_long")
    assert (
        skipped.error
        and "8192-token context window" in skipped.error
        and "word" not in skipped.error
    )
    assert ollama.calls == 0


def test_the_last_provider_failing_answers_the_terminal_hop_in_place(
    redis_client: FlakyRedis,
) -> None:
    # Given Claude, the last provider of the chain, failing
    claude, events = Provider(ProviderServerError("claude HTTP 500")), []
    runner = _runner(redis_client, {"claude": claude}, events)
    # When its hop runs (and when its message is delivered again)
    first = _run(runner, position=1)
    again = _run(runner, position=1)
    # Then the static answer is given right there: the request is never sent back to routing
    assert isinstance(first, Done) and first.result["status"] == "fallback"
    assert isinstance(again, Done) and again.result["status"] == "fallback"
    assert claude.calls == 1


@pytest.mark.parametrize(
    ("raw", "queue"),
    [
        ({"prompt": "What is a pod?"}, "gemini"),
        ({"prompt": "What is a pod?", "priority": "critical"}, "gemini.urgent"),
        ({"prompt": "What is a pod?", "deadline_s": 30}, "gemini.urgent"),
    ],
)
def test_urgent_requests_are_forwarded_to_urgent_lanes_at_every_hop(
    redis_client: FlakyRedis, raw: dict[str, Any], queue: str
) -> None:
    # Given a route whose first hop is Gemini
    runner = _runner(redis_client, {"claude": Provider(ProviderServerError("down"))}, [])
    request = parse_request(raw)
    # When the request is routed, then falls back from Claude
    first = runner.start(request, "req-lane", journey_id("req-lane", raw), ROUTE)
    assert isinstance(first, Forward) and first.queue == queue
    route = Route(
        intent="QUERY",
        complexity=1,
        chain=(Hop("claude", "claude-sonnet-5"), *ROUTE.chain[:1], ROUTE.chain[-1]),
        reason="test",
    )
    fallback = runner.run(
        request, "req-lane2", Journey(route=route, id=journey_id("req-lane2", raw))
    )
    # Then every forward is in the request's own lane
    assert isinstance(fallback, Forward) and fallback.queue == queue


def test_a_request_whose_deadline_passed_in_a_queue_gets_the_chains_end(
    redis_client: FlakyRedis,
) -> None:
    # Given a request with a 2 s deadline the pool first saw waiting 5 s ago
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    raw = {"prompt": "What is a pod?", "deadline_s": 2}
    seen = runner.now() - 5
    # When the router gets to it
    step = runner.start(
        parse_request(raw), "req-late", journey_id("req-late", raw), ROUTE, seen_at=seen
    )
    # Then no provider is called and the producer gets the chain's end, its attempts saying
    # `deadline` (issue #42: never a bare error)
    assert isinstance(step, Done)
    assert step.result["status"] == "fallback", step.result
    assert [a["outcome"] for a in step.result["attempts"]] == ["deadline", "deadline", "fallback"]
    assert gemini.calls == 0
    assert step.result["latency_ms"] >= 5000


def test_a_hop_whose_message_expired_calls_nobody_and_answers_the_chains_end(
    redis_client: FlakyRedis,
) -> None:
    # Given a request whose message expired (its producer's ``expires``) before its first hop
    ollama, gemini, events = Provider(), Provider(), []
    runner = _runner(redis_client, {"ollama": ollama, "gemini": gemini}, events)
    # When that hop runs
    step = _run_expiring(runner, runner.now() - 1)
    # Then no provider is called, and the producer gets the chain's end, each provider passed
    # over for time with the reason
    assert isinstance(step, Done)
    assert step.result["status"] == "fallback", step.result
    attempts = step.result["attempts"]
    assert [a["outcome"] for a in attempts] == ["deadline", "deadline", "fallback"]
    assert all("expired" in a["error"] for a in attempts[:2]), attempts
    assert (ollama.calls, gemini.calls) == (0, 0)


def test_a_call_the_messages_expiry_passes_during_is_cut_there_and_answers_the_chains_end(
    redis_client: FlakyRedis,
) -> None:
    # Given Gemini hanging past its 30 s timeout, and a request (no deadline) whose message
    # expires 0.5 s from now on the pool's clock
    gemini, claude, events = Provider(hang=True), Provider(), []
    runner = _runner(redis_client, {"gemini": gemini, "claude": claude}, events)
    runner.timeouts = lambda provider: 30.0
    started = time.monotonic()
    # When Gemini's hop runs
    step = _run_expiring(runner, runner.now() + 0.5)
    waited = time.monotonic() - started
    # Then the call was cut at the expiry, not at Gemini's timeout
    (limit,) = gemini.limits
    assert limit is not None and 0.3 < limit <= 0.5, limit
    assert waited < 2.0, waited
    # And the producer gets the chain's static answer: Claude is passed over, never called
    assert isinstance(step, Done)
    assert step.result["status"] == "fallback", step.result
    attempts = step.result["attempts"]
    trail = [(a["provider"], a["outcome"], a["code"]) for a in attempts]
    assert trail == [
        ("gemini", "error", "deadline"),
        ("claude", "deadline", None),
        ("static", "fallback", None),
    ], trail
    assert all("message expired" in a["error"] for a in attempts[:2]), attempts
    assert "during the call" in attempts[0]["error"], attempts[0]
    assert claude.calls == 0
    # And the cut is booked as a deadline cut is: nothing against Gemini's breaker, the call's
    # estimate charged (it may have been billed), its ledger row saying so
    assert _failures(redis_client, "gemini") == 0
    assert breakers_for(redis_client)["gemini"].snapshot()["state"] == "closed"
    usage = quotas_for(redis_client)["gemini"].usage()
    assert usage["daily_requests"]["used"] == 1
    assert usage["daily_tokens"]["used"] == REQUEST.estimated_total_tokens()
    (row,) = [r for r in ledger(redis_client) if r.provider == "gemini"]
    assert (row.outcome, row.estimated) == ("error", True), row
    assert failed_reason(row.error_message) == "deadline", row


def test_a_message_expiring_while_redis_is_asked_again_calls_no_one(
    redis_client: FlakyRedis,
) -> None:
    # Given a request whose message expires 0.2 s from now, and Redis not answering the hop's
    # begin for its first 0.5 s
    gemini, claude = Provider(), Provider()
    runner = _runner(redis_client, {"gemini": gemini, "claude": claude}, [])
    expires_at = runner.now() + 0.2
    redis_client.down = True
    threading.Timer(0.5, lambda: setattr(redis_client, "down", False)).start()
    # When Gemini's hop runs, asking begin again until Redis answers
    step = _run_expiring(runner, expires_at)
    # Then no provider is called (a call begun then would have 0 s to answer, and be charged):
    # the expiry passed before begin was answered, and the chain's end answers
    assert (gemini.calls, claude.calls) == (0, 0)
    assert isinstance(step, Done) and step.result["status"] == "fallback", step
    attempts = step.result["attempts"]
    assert [a["outcome"] for a in attempts] == ["deadline", "deadline", "fallback"], attempts
    assert all("expired before this hop" in a["error"] for a in attempts[:2]), attempts


def _run_expiring(runner: HopRunner, expires_at: float) -> Done | Forward:
    step = runner.run(
        REQUEST, "req-1", Journey(route=ROUTE, position=0, id=JOURNEY_ID), expires_at=expires_at
    )
    assert not isinstance(step, Drop)
    return step


def test_a_deadline_earlier_than_the_messages_expiry_cuts_the_call_as_before(
    redis_client: FlakyRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timing, "_last_sample", {})  # no sample kept by an earlier test
    # Given Gemini hanging, and a request with 1 s of deadline left whose message expires later
    gemini, claude = Provider(hang=True), Provider()
    runner = _runner(redis_client, {"gemini": gemini, "claude": claude}, [])
    runner.timeouts = lambda provider: 30.0
    raw = {"prompt": "What is a pod?", "deadline_s": 1}
    journey = Journey(route=ROUTE, id=journey_id("req-e", raw), received_at=runner.now())
    # When Gemini's hop runs
    step = runner.run(parse_request(raw), "req-e", journey, expires_at=runner.now() + 20)
    # Then the deadline wins: the call is cut at its share of the deadline, says so, and the
    # request goes on to Claude (the message has not expired), nothing against Gemini
    (limit,) = gemini.limits
    assert limit is not None and limit <= 0.5, limit
    assert isinstance(step, Forward) and step.queue.startswith("claude"), step
    (attempt,) = step.journey.attempts
    assert (attempt.outcome, attempt.code) == ("error", "deadline")
    assert "request's deadline" in (attempt.error or ""), attempt
    assert _failures(redis_client, "gemini") == 0


def test_an_expiry_is_read_on_the_pools_clock_not_a_fresh_process_host_clock(
    redis_client: FlakyRedis,
) -> None:
    import time

    from aipool.attempt.clock import RedisClock

    # Given a fresh worker process whose host clock is 90 s ahead of the pool's (Redis's)
    runner = _local_runner(redis_client)
    runner.book.clock = RedisClock(local=lambda: time.time() + 90)
    # Then a message expiring in 30 s has not expired, one a second ago has, and none without
    assert not runner.expired(time.time() + 30)
    assert runner.expired(time.time() - 1)
    assert not runner.expired(None)


def test_a_hop_whose_lane_waits_longer_than_the_deadline_leaves_is_passed_over(
    redis_client: FlakyRedis,
) -> None:
    # Given Gemini's urgent lane holding a request that has waited 20 s, Claude's none
    events: list[AttemptEvent] = []
    runner = _runner(redis_client, {}, events)
    asked: list[list[str]] = []

    def waits(lanes: list[str]) -> dict[str, float]:
        asked.append(lanes)
        return {"gemini.urgent": 20.0, "claude.urgent": 0.0}

    runner.lane_waits = waits
    raw = {"prompt": "What is a pod?", "deadline_s": 10}
    # When a request with a 10 s deadline is routed
    step = runner.start(parse_request(raw), "req-wait", journey_id("req-wait", raw), ROUTE)
    # Then Gemini is passed over for its queue's wait, saying so, and Claude's lane takes it
    assert isinstance(step, Forward) and step.queue == "claude.urgent"
    (skipped,) = step.journey.attempts
    assert (skipped.provider, skipped.outcome) == ("gemini", "queue_wait")
    assert skipped.error and "gemini.urgent" in skipped.error and "20.0s" in skipped.error
    assert [e.attempt.outcome for e in events] == ["queue_wait"]
    # and a request without a deadline never asks
    plain = {"prompt": "What is a pod?"}
    step = runner.start(parse_request(plain), "req-p", journey_id("req-p", plain), ROUTE)
    assert isinstance(step, Forward) and step.queue == "gemini" and len(asked) == 1


#: A route starting on the local Ollama: free, and without a quota.
LOCAL = Route(
    intent="QUERY",
    complexity=1,
    chain=(Hop("ollama", "llama3.2:3b"), *ROUTE.chain),
    reason="test",
)


def _local_runner(client: Any, providers: dict[str, Provider] | None = None) -> HopRunner:
    """A runner whose prices are the table's: Ollama free, the cloud paid."""
    runner = _runner(client, providers or {}, [])
    runner.pricing = lambda provider, *_: Decimal(0) if provider == "ollama" else Decimal("0.01")
    return runner


def _producer_step(
    runner: HopRunner, raw: dict[str, Any], request_id: str, route: Route = LOCAL
) -> Forward:
    step = runner.dispatch(parse_request(raw), request_id, journey_id(request_id, raw), route)
    assert isinstance(step, Forward)
    return step


def _commands(client: Any) -> list[str]:
    """Every command ``client`` sends from now on, by name (the spy records, then passes on)."""
    sent: list[str] = []
    real = client.execute_command

    def spy(*args: Any, **kwargs: Any) -> Any:
        sent.append(str(args[0]).upper())
        return real(*args, **kwargs)

    client.execute_command = spy
    return sent


def _open(client: Any, provider: str) -> None:
    breaker = breakers_for(client)[provider]
    for _ in range(breaker.settings.failure_threshold):
        breaker.record_failure(breaker.acquire())


def test_a_producer_sends_a_request_without_a_deadline_straight_to_the_local_model(
    redis_client: FlakyRedis,
) -> None:
    # Given a producer that has looked at Ollama's breaker (closed) within the last second
    runner = _local_runner(redis_client)
    _producer_step(runner, RAW, "req-0")
    sent = _commands(redis_client)
    # When it routes more requests without a deadline that start on Ollama
    steps = [_producer_step(runner, RAW, f"req-{i}") for i in range(1, 6)]
    # Then each goes to Ollama's queue at the chain's first hop, and the producer sent Redis
    # nothing: no route record, no look at the breaker
    assert [(s.queue, s.journey.position, s.journey.attempts) for s in steps] == [
        ("ollama", 0, [])
    ] * 5
    assert sent == []
    assert not list(redis_client.scan_iter("aipool:attempt:*:route"))


def test_a_request_starting_on_a_paid_or_limited_provider_is_routed_by_the_pool(
    redis_client: FlakyRedis,
) -> None:
    # Given Gemini (paid, with a quota) first on the chain and its requests-per-minute spent
    runner = _local_runner(redis_client)
    gemini = quotas_for(redis_client)["gemini"]
    for i in range(gemini.limits.rpm or 0):
        gemini.reserve(f"other-{i}", 0, 100)
    # When a producer routes a request without a deadline
    step = _producer_step(runner, RAW, "req-1", ROUTE)
    # Then the pool routes it: Gemini is passed over at dispatch, never queued for, and Claude
    # is first
    assert step.queue == "claude"
    assert [(a.provider, a.outcome) for a in step.journey.attempts] == [
        ("gemini", "quota_exceeded")
    ]


def test_a_request_sent_straight_to_an_open_breaker_is_passed_over_by_that_worker(
    redis_client: FlakyRedis,
) -> None:
    # Given a producer whose look at Ollama's breaker (closed) is fresh, and the breaker opening
    # right after it
    ollama = Provider()
    runner = _local_runner(redis_client, {"ollama": ollama})
    _producer_step(runner, RAW, "req-0")
    _open(redis_client, "ollama")
    # When a request goes straight to Ollama's queue and its worker runs the hop
    step = _producer_step(runner, RAW, "req-1")
    assert step.queue == "ollama"
    at_ollama = runner.run(REQUEST, "req-1", step.journey)
    # Then Ollama is passed over there without a call, the skip is on the trail, Gemini is next
    assert isinstance(at_ollama, Forward) and at_ollama.queue == "gemini"
    assert [(a.provider, a.outcome) for a in at_ollama.journey.attempts] == [
        ("ollama", "circuit_open")
    ]
    assert ollama.calls == 0


def test_a_producer_routes_through_the_pool_once_its_look_sees_the_breaker_open(
    redis_client: FlakyRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given Ollama's breaker open, and a producer whose last look is older than LOOK_FRESH_S
    monkeypatch.setattr("aipool.attempt.runner.LOOK_FRESH_S", 0.0)
    runner = _local_runner(redis_client)
    _open(redis_client, "ollama")
    # When it routes a request without a deadline
    step = _producer_step(runner, RAW, "req-1")
    # Then the pool routes it: Ollama is passed over at dispatch, recorded, and Gemini is first
    assert step.queue == "gemini"
    assert [(a.provider, a.outcome) for a in step.journey.attempts] == [("ollama", "circuit_open")]
    assert list(redis_client.scan_iter("aipool:attempt:*:route"))


def test_a_request_with_a_deadline_is_routed_by_the_pool_on_its_clock(
    redis_client: FlakyRedis,
) -> None:
    # Given a producer with a fresh look at a closed breaker
    runner = _local_runner(redis_client)
    _producer_step(runner, RAW, "req-0")
    # When it routes a request with a deadline
    step = _producer_step(runner, {**RAW, "deadline_s": 30}, "req-1")
    # Then the pool routes it: the route record says when the pool first saw it, the time its
    # deadline counts from
    assert step.queue == "ollama.urgent"
    assert step.journey.received_at is not None
    (key,) = redis_client.scan_iter("aipool:attempt:*:route")
    assert float(redis_client.hget(key, "received")) == step.journey.received_at


def test_a_producer_that_cannot_read_a_breaker_lets_the_pool_route(
    redis_client: FlakyRedis,
) -> None:
    # Given Redis gone before the producer ever looked at a breaker
    runner = _local_runner(redis_client)
    redis_client.down = True
    # When it routes a request without a deadline
    step = _producer_step(runner, RAW, "req-1")
    # Then it is routed as any request is while Redis is away (not sent blind)
    unguarded = runner.start(
        REQUEST, "req-2", journey_id("req-2", RAW), LOCAL, answer_terminal=False
    )
    assert isinstance(unguarded, Forward)
    assert (step.queue, len(step.journey.attempts)) == (
        unguarded.queue,
        len(unguarded.journey.attempts),
    )


def test_the_router_forwards_a_request_without_a_deadline_without_reading_when_it_was_seen(
    redis_client: FlakyRedis,
) -> None:
    # Given the router queue's worker, whose look at Ollama's breaker (closed) is fresh
    runner = _local_runner(redis_client)
    _producer_step(runner, RAW, "req-0")
    asked: list[str] = []

    def seen_at() -> float | None:
        asked.append("seen")
        return None

    # When it takes a request sent by name, with and without a deadline
    plain = runner.dispatch(
        REQUEST, "req-1", journey_id("req-1", RAW), LOCAL, answer_terminal=True, seen_at=seen_at
    )
    timed_raw = {**RAW, "deadline_s": 30}
    timed = runner.dispatch(
        parse_request(timed_raw),
        "req-2",
        journey_id("req-2", timed_raw),
        LOCAL,
        answer_terminal=True,
        seen_at=seen_at,
    )
    # Then the first goes on to Ollama unrouted; only the one with a deadline asks when the pool
    # first saw it waiting (its deadline counts from there) and gets a route record
    assert isinstance(plain, Forward) and plain.queue == "ollama"
    assert isinstance(timed, Forward) and timed.queue == "ollama.urgent"
    assert asked == ["seen"]
    (key,) = redis_client.scan_iter("aipool:attempt:*:route")
    assert journey_id("req-2", timed_raw) in key.decode()


class SlowProvider(Provider):
    """A provider that takes ``seconds`` to answer."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def complete(
        self,
        request: Request,
        model: str,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        import time

        time.sleep(self.seconds)
        return super().complete(request, model, timeout_s, thinking_budget)


def test_a_request_sent_straight_to_the_local_model_is_timed_from_when_it_was_sent(
    redis_client: FlakyRedis,
) -> None:
    # Given a producer that sends a request straight to Ollama, which takes 30 ms to answer
    runner = _local_runner(redis_client, {"ollama": SlowProvider(0.03)})
    step = _producer_step(runner, RAW, "req-1")
    assert step.queue == "ollama"
    # When Ollama's worker answers it
    done = runner.run(REQUEST, "req-1", step.journey)
    # Then its latency counts from when the producer sent it: at least the call's 30 ms (on
    # 871a594 it was 0.0, as no route record said when the pool first saw the request)
    assert isinstance(done, Done)
    assert done.result["latency_ms"] >= 30


def test_a_request_answered_after_a_local_failure_counts_every_hop_in_its_latency(
    redis_client: FlakyRedis,
) -> None:
    # Given Ollama failing after 20 ms and Gemini answering after 20 ms
    slow_failure = SlowProvider(0.02)
    slow_failure.error = ProviderServerError("down", status=500)
    runner = _local_runner(redis_client, {"ollama": slow_failure, "gemini": SlowProvider(0.02)})
    step = _producer_step(runner, RAW, "req-1")
    # When the request goes through both hops
    at_ollama = runner.run(REQUEST, "req-1", step.journey)
    assert isinstance(at_ollama, Forward) and at_ollama.queue == "gemini"
    done = runner.run(REQUEST, "req-1", at_ollama.journey)
    # Then its latency covers both calls
    assert isinstance(done, Done)
    assert done.result["latency_ms"] >= 40


def test_a_producer_whose_clock_is_behind_stamps_what_it_sends_on_the_pools_clock(
    redis_client: FlakyRedis,
) -> None:
    import time

    from aipool.attempt.clock import RedisClock

    # Given a producer whose host clock is 60 s behind, and a worker with the right time
    producer = _local_runner(redis_client)
    producer.book.clock = RedisClock(local=lambda: time.time() - 60)
    worker = _local_runner(redis_client)
    # When it sends a request straight to Ollama, and the worker answers
    step = _producer_step(producer, RAW, "req-1")
    done = worker.run(REQUEST, "req-1", step.journey)
    # Then the latency is the pool's, not inflated by the producer's 60 s
    assert isinstance(done, Done)
    assert 0 < done.result["latency_ms"] < 30_000


# -- what real providers send (issue #41) ------------------------------------------------------

BILLED = Completion(text="", model="gemini-2.5-flash", input_tokens=19, output_tokens=33)


def _clocked_runner(
    client: Any, providers: dict[str, Provider], clock: Any, events: list[AttemptEvent]
) -> HopRunner:
    """A runner whose pool time (the attempt script's, the breakers') is ``clock``."""
    book = AttemptBook(
        client,
        breakers_for(client, clock=clock),
        quotas_for(client, clock=clock),
        clock=RedisClock(clock),
        script_time=clock,
    )
    lookup: Callable[[str], Any] = lambda name: providers.get(name) or Provider()  # noqa: E731
    return HopRunner(
        book, observers=[events.append], pricing=lambda *_: Decimal("0.01"), providers=lookup
    )


def _failures(client: Any, provider: str) -> int:
    return int(client.hget(f"aipool:breaker:{provider}:state", "failures") or 0)


def test_a_withheld_answer_is_booked_as_billed_and_moves_on_without_a_breaker_failure(
    redis_client: FlakyRedis,
) -> None:
    # Given Gemini withholding an answer it billed 19 + 33 tokens for
    gemini, events = Provider(ContentBlocked("gemini: withheld (RECITATION)", billed=BILLED)), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    # When the hop runs
    step = _run(runner)
    # Then the request goes on to Claude, the trail says why, and nothing counts against Gemini
    assert isinstance(step, Forward) and step.queue == "claude"
    (attempt,) = step.journey.attempts
    assert (attempt.outcome, attempt.code) == ("error", "content_blocked")
    assert _failures(redis_client, "gemini") == 0
    # And the call is booked with every billed token: quota, ledger row and event agree
    usage = quotas_for(redis_client)["gemini"].usage()
    assert (usage["daily_requests"]["used"], usage["daily_tokens"]["used"]) == (1, 52)
    (row,) = ledger(redis_client)
    assert (row.outcome, row.input_tokens, row.output_tokens) == ("error", 19, 33)
    assert row.cost_usd == Decimal("0.01")
    assert (events[0].input_tokens, events[0].output_tokens) == (19, 33)


def test_five_blocked_prompts_leave_the_breaker_closed(redis_client: FlakyRedis) -> None:
    blocked = PromptBlocked("gemini: the prompt was blocked (SAFETY)", billed=BILLED)
    runner = _runner(redis_client, {"gemini": Provider(blocked)}, [])
    for i in range(5):
        raw = {"prompt": f"blocked prompt {i}"}
        step = runner.run(
            parse_request(raw),
            f"req-{i}",
            Journey(route=ROUTE, id=journey_id(f"req-{i}", raw)),
        )
        assert isinstance(step, Forward) and step.queue == "claude"
    assert breakers_for(redis_client)["gemini"].snapshot()["state"] == "closed"
    assert _failures(redis_client, "gemini") == 0


TOOLS_ROUTE = Route(
    intent="TOOL_CALL",
    complexity=2,
    chain=(
        Hop("gemini", "gemini-2.5-flash"),
        Hop("claude", "claude-sonnet-5"),
        Hop("refuse", "refuse"),
    ),
    reason="test",
    refusal_ends=True,
)


@pytest.mark.parametrize(
    ("route", "status", "next_hop"),
    [(TOOLS_ROUTE, "refused", "refuse"), (ROUTE, None, "claude")],
    ids=["tool-chain-ends", "general-chain-goes-on"],
)
def test_a_refusal_ends_the_chain_only_where_the_route_says_so(
    redis_client: FlakyRedis, route: Route, status: str | None, next_hop: str
) -> None:
    # Given Gemini declining the request
    gemini = Provider(ModelRefused("gemini: the model refused to answer", billed=BILLED))
    claude = Provider()
    runner = _runner(redis_client, {"gemini": gemini, "claude": claude}, [])
    # When the hop runs, and when its message is delivered again
    journey = Journey(route=route, id=JOURNEY_ID)
    step = runner.run(REQUEST, "req-1", journey)
    again = runner.run(REQUEST, "req-1", Journey(route=route, id=JOURNEY_ID))
    # Then a tool chain ends at its refusal with no other model asked; a general one goes on
    if status is not None:
        assert isinstance(step, Done) and step.result["status"] == status
        assert isinstance(again, Done) and again.result["status"] == status
    else:
        assert isinstance(step, Forward) and step.queue == next_hop
        assert isinstance(again, Forward) and again.queue == next_hop
    assert claude.calls == 0 and gemini.calls == 1


def test_a_declared_retry_delay_pauses_the_provider_for_the_pool_without_a_failure(
    redis_client: FlakyRedis,
) -> None:
    # Given Gemini answering 429 with a 20 s delay, on a clock the test moves
    clock = Clock(1_795_000_000.0)
    gemini = Provider(ProviderRateLimited("gemini HTTP 429", retry_after=20.0))
    claude = Provider()
    runner = _clocked_runner(redis_client, {"gemini": gemini, "claude": claude}, clock, [])
    # When a request's hop at Gemini meets it
    first = runner.run(REQUEST, "req-0", Journey(route=ROUTE, id=JOURNEY_ID))
    assert isinstance(first, Forward) and first.queue == "claude"
    gemini.error = None
    # Then for the next 20 s a Gemini-first request is routed past Gemini, with no call and no
    # breaker failure, both where the pool routes it and where a Gemini worker gets it
    clock.advance(19.0)
    raw = {"prompt": "another"}
    routed = runner.start(parse_request(raw), "req-1", journey_id("req-1", raw), ROUTE)
    assert isinstance(routed, Forward) and routed.queue == "claude"
    ((provider, outcome, error),) = [
        (a.provider, a.outcome, a.error) for a in routed.journey.attempts
    ]
    assert (provider, outcome) == ("gemini", "rate_limited")
    assert error is not None and "paused until" in error and "in 1.0 s" in error
    at_gemini = runner.run(
        parse_request(raw), "req-2", Journey(route=ROUTE, id=journey_id("req-2", raw))
    )
    assert isinstance(at_gemini, Forward) and at_gemini.queue == "claude"
    assert gemini.calls == 1 and _failures(redis_client, "gemini") == 0
    assert breakers_for(redis_client, clock=clock)["gemini"].snapshot()["paused_until"] == (
        pytest.approx(1_795_000_020.0)
    )
    # And once the delay has passed, Gemini is called again
    clock.advance(1.5)
    raw = {"prompt": "after the pause"}
    later = runner.run(
        parse_request(raw), "req-3", Journey(route=ROUTE, id=journey_id("req-3", raw))
    )
    assert isinstance(later, Done) and later.result["provider"] == "gemini"
    assert gemini.calls == 2


def test_a_429_without_a_delay_counts_against_the_provider(redis_client: FlakyRedis) -> None:
    gemini = Provider(ProviderRateLimited("gemini HTTP 429", retry_after=None))
    runner = _runner(redis_client, {"gemini": gemini}, [])
    step = _run(runner)
    assert isinstance(step, Forward) and step.queue == "claude"
    assert _failures(redis_client, "gemini") == 1
    assert breakers_for(redis_client)["gemini"].snapshot()["paused_until"] is None


def test_a_declared_delay_pauses_at_most_the_pools_setting(
    redis_client: FlakyRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a provider asking for a day, and the pool's bound of 120 s
    monkeypatch.setenv("AIPOOL_RATE_LIMIT_PAUSE_MAX_S", "120")
    clock = Clock(1_795_000_000.0)
    gemini = Provider(ProviderRateLimited("gemini HTTP 429", retry_after=86_400.0))
    runner = _clocked_runner(redis_client, {"gemini": gemini}, clock, [])
    _run(runner)
    paused = breakers_for(redis_client, clock=clock)["gemini"].snapshot()["paused_until"]
    assert paused == pytest.approx(1_795_000_120.0)


@pytest.mark.parametrize(("thinking", "budget"), [(0.5, 512), (0.0, 0), (None, None)])
def test_each_call_is_given_its_routes_share_of_max_tokens_to_think(
    redis_client: FlakyRedis, thinking: float | None, budget: int | None
) -> None:
    gemini = Provider()
    runner = _runner(redis_client, {"gemini": gemini}, [])
    route = Route(**{**ROUTE.__dict__, "thinking": thinking})
    raw = {"prompt": "What is a pod?", "max_tokens": 1024}
    runner.run(parse_request(raw), "req-t", Journey(route=route, id=journey_id("req-t", raw)))
    assert gemini.budgets == [budget]


class SoftTimeLimitExceeded(Exception):
    """Celery's soft time limit, by name (as aipool.errors recognises it)."""


def test_the_soft_time_limit_firing_in_calls_never_opens_the_breaker(
    redis_client: FlakyRedis,
) -> None:
    # Given the hop's soft time limit firing inside five of Gemini's calls (issue #42, case 5)
    runner = _runner(redis_client, {"gemini": Provider(SoftTimeLimitExceeded())}, [])
    for i in range(5):
        raw = {"prompt": f"question {i}"}
        step = runner.run(
            parse_request(raw), f"req-{i}", Journey(route=ROUTE, id=journey_id(f"req-{i}", raw))
        )
        # Then each moves on to Claude, its trail saying the time limit cut the call
        assert isinstance(step, Forward) and step.queue == "claude"
        (attempt,) = step.journey.attempts
        assert (attempt.outcome, attempt.code) == ("error", "time_limit")
    # And nothing counted against Gemini: the limit is the pool's, not the provider's fault
    assert breakers_for(redis_client)["gemini"].snapshot()["state"] == "closed"
    assert _failures(redis_client, "gemini") == 0


def test_a_hop_with_later_providers_calls_for_its_share_of_the_deadline(
    redis_client: FlakyRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timing, "_last_sample", {})  # no sample kept by an earlier test
    # Given a request with 3 s left and Claude after Gemini, no latency known yet
    limits: list[float | None] = []

    class Timed(Provider):
        def complete(self, request: Request, model: str, **kwargs: Any) -> Completion:
            limits.append(kwargs.get("timeout_s"))
            return super().complete(request, model, **kwargs)

    events: list[AttemptEvent] = []
    book = AttemptBook(redis_client, breakers_for(redis_client), quotas_for(redis_client))
    runner = HopRunner(book, observers=[events.append], providers=lambda name: Timed())
    raw = {"prompt": "What is a pod?", "deadline_s": 3}
    journey = Journey(route=ROUTE, id=journey_id("req-d", raw), received_at=runner.now())
    # When Gemini's hop runs
    step = runner.run(parse_request(raw), "req-d", journey)
    # Then its call was bounded by half of what was left (an even split with Claude), not the
    # whole deadline, and its latency is kept for the next requests
    assert isinstance(step, Done)
    assert limits[0] is not None and 1.2 < limits[0] <= 1.5
    assert redis_client.llen("aipool:latency:gemini") == 1


def test_a_providers_own_timeout_in_a_call_the_deadline_shortened_still_counts(
    redis_client: FlakyRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timing, "_last_sample", {})  # no sample kept by an earlier test
    # Given Gemini answering 504 (its DEADLINE_EXCEEDED) to a call its deadline share shortened
    gemini = Provider(ProviderTimeout("gemini HTTP 504: DEADLINE_EXCEEDED", status=504))
    runner = _runner(redis_client, {"gemini": gemini}, [])
    raw = {"prompt": "What is a pod?", "deadline_s": 3}
    journey = Journey(route=ROUTE, id=journey_id("req-504", raw), received_at=runner.now())
    # When its hop runs
    step = runner.run(parse_request(raw), "req-504", journey)
    # Then the provider's own timeout is no deadline cut: it says so, and counts against Gemini
    assert isinstance(step, Forward) and step.queue.startswith("claude")
    (attempt,) = step.journey.attempts
    assert (attempt.outcome, attempt.code) == ("error", "timeout")
    assert _failures(redis_client, "gemini") == 1


def test_the_soft_time_limit_while_finish_records_a_paid_answer_does_not_lose_it(
    redis_client: FlakyRedis,
) -> None:
    # Given Gemini answering, and the hop's soft limit firing in the first try of its finish
    # (a stalled Redis held it there: issue #42)
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    original, fired = gemini.complete, []

    def answer_then_interrupt(*args: Any, **kwargs: Any) -> Completion:
        completion = original(*args, **kwargs)
        real = redis_client.execute_command

        def once(*command: Any, **options: Any) -> Any:
            if not fired:
                fired.append(command[0])
                raise SoftTimeLimitExceeded()
            return real(*command, **options)

        redis_client.execute_command = once  # type: ignore[method-assign]
        return completion

    gemini.complete = answer_then_interrupt  # type: ignore[method-assign]
    # When the hop runs
    step = _run(runner)
    # Then the finish was tried again: the producer gets the paid answer, recorded once
    assert fired
    assert isinstance(step, Done) and step.result["provider"] == "gemini"
    assert [(e.attempt.outcome, e.booked) for e in events] == [("ok", True)]
    (row,) = ledger(redis_client)
    assert row.outcome == "ok"


def test_a_begin_redis_does_not_answer_is_asked_again_before_the_guards_count_as_gone(
    redis_client: FlakyRedis,
) -> None:
    # Given Redis not answering when the hop asks its guards, and back 0.5 s later
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    redis_client.down = True
    threading.Timer(0.5, lambda: setattr(redis_client, "down", False)).start()
    # When the hop runs
    step = _run(runner)
    # Then begin was asked again (within SCRIPT_RETRY_S) and Gemini answers, called once
    assert isinstance(step, Done)
    assert (step.result["status"], step.result["provider"]) == ("ok", "gemini")
    assert gemini.calls == 1
    assert [(e.hop.provider, e.attempt.outcome) for e in events] == [("gemini", "ok")]


def test_an_answers_finish_writes_the_producers_result(redis_client: FlakyRedis) -> None:
    # Given a hop run by a task whose result backend is the attempts' Redis
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    writer = _Recording()
    # When gemini answers
    with result_write.writing(writer):
        step = _run(runner)
    # Then the producer's result, the one the hop returns, was written by its finish, and
    # Celery's own store of it is skipped
    assert isinstance(step, Done)
    stored = json.loads(redis_client.get("celery-task-meta-req-1") or b"{}")
    assert stored["result"] == json.loads(json.dumps(step.result))
    assert result_write.written_already("req-1")
    assert writer.given_back == []


def test_an_answers_result_finish_could_not_write_is_celerys_to_write(
    redis_client: FlakyRedis,
) -> None:
    # Given a hop whose Redis goes away once gemini has answered
    gemini, events = Provider(), []
    runner = _runner(redis_client, {"gemini": gemini}, events)
    _lose_redis_once_answered(gemini, redis_client)
    writer = _Recording()
    # When the hop runs
    with result_write.writing(writer):
        step = _run(runner)
    # Then the answer is the producer's, its write handed back, and Celery stores it
    assert isinstance(step, Done) and step.result["provider"] == "gemini"
    assert [w.task_id for w in writer.given_back] == ["req-1"]
    assert not result_write.written_already("req-1")


class _Recording:
    """A result backend's writer: Celery's meta as JSON; the writes finish could not make."""

    def __init__(self) -> None:
        self.given_back: list[ResultWrite] = []

    def prepare(self, task_id: str, result: dict[str, Any]) -> ResultWrite:
        meta = json.dumps({"status": "SUCCESS", "result": result, "task_id": task_id})
        return ResultWrite(task_id, f"celery-task-meta-{task_id}", meta, 3600)

    def missed(self, write: ResultWrite) -> None:
        self.given_back.append(write)
