"""Quota behaviour, the same over fakeredis and the real Redis."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from aipool.errors import QuotaExceeded
from aipool.providers.catalog import PROVIDERS
from aipool.quota import Quota, quotas_for
from aipool.settings.provider_limits import QuotaLimits

TAIPEI = ZoneInfo("Asia/Taipei")
LIMITS = QuotaLimits(rpm=3, daily_requests=5, daily_tokens=1_000, monthly_tokens=2_500)


def local(*args: int) -> float:
    return datetime(*args, tzinfo=TAIPEI).timestamp()  # type: ignore[misc]


def make(client: Any, clock: Any, limits: QuotaLimits = LIMITS, **kw: Any) -> Quota:
    return Quota(client, "gemini", limits, clock=clock, tz=TAIPEI, **kw)


def used(quota: Quota) -> dict[str, int]:
    report = quota.usage()
    return {
        k: report[k]["used"] for k in ("rpm", "daily_requests", "daily_tokens", "monthly_tokens")
    }


def test_a_reservation_counts_against_every_limit(client, clock):
    # Given an empty quota
    quota = make(client, clock)
    # When a call reserves 100 tokens
    res = quota.reserve("req-1", 0, 100)
    # Then one request and 100 tokens are counted everywhere
    assert (res.tokens, res.at) == (100, clock.now)
    assert used(quota) == {
        "rpm": 1,
        "daily_requests": 1,
        "daily_tokens": 100,
        "monthly_tokens": 100,
    }
    report = quota.usage()
    assert report["daily_tokens"] == {"used": 100, "limit": 1_000, "remaining": 900}


def test_rpm_is_a_sliding_window(client, clock):
    # Given rpm reservations spread over the last half minute
    quota = make(client, clock, QuotaLimits(rpm=3))
    first_at = clock.now
    for i in range(3):
        quota.reserve(f"r{i}", 0, 1)
        clock.advance(15)
    # When another call comes just before the first reservation is 60 s old
    clock.now = first_at + 59.9
    # Then it is refused, naming rpm and when the oldest leaves the window
    with pytest.raises(QuotaExceeded, match=r"rpm \(3 requests in the last 60 s") as refused:
        quota.reserve("r3", 0, 1)
    assert "(in 0 s)" in str(refused.value)
    # When the first reservation is exactly 60 s old, one call (only one) fits
    clock.now = first_at + 60
    quota.reserve("r3", 0, 1)
    with pytest.raises(QuotaExceeded):
        quota.reserve("r4", 0, 1)


def test_no_minute_boundary_lets_twice_the_rpm_through(client, clock):
    # Given rpm reservations made in the last second of a calendar minute
    clock.now = local(2026, 11, 29, 10, 0, 59)
    quota = make(client, clock, QuotaLimits(rpm=3))
    for i in range(3):
        quota.reserve(f"r{i}", 0, 1)
    # When the next calendar minute starts
    clock.now = local(2026, 11, 29, 10, 1, 0)
    # Then there is still no room (a fixed window would have reset here)
    assert quota.has_room(1) is False
    with pytest.raises(QuotaExceeded, match="rpm"):
        quota.reserve("r3", 0, 1)


def test_a_host_whose_clock_is_behind_stamps_in_order(client, clock):
    # Given a reservation from a host whose clock reads 30 s ahead of this one
    ahead = make(client, lambda: clock.now + 30, QuotaLimits(rpm=3))
    ahead.reserve("r0", 0, 1)
    # When this host reserves by its own, earlier clock
    behind = make(client, clock, QuotaLimits(rpm=3))
    res = behind.reserve("r1", 0, 1)
    # Then its reservation is stamped no earlier than the newest, so the window stays ordered
    # and "the last 60 seconds" is the same set of reservations for every host
    assert res.at == clock.now + 30


def test_daily_requests_limit(client, clock):
    # Given the day's requests all used, spread out so rpm is not the limit
    clock.now = local(2026, 11, 29, 9, 0, 0)
    quota = make(client, clock)
    for i in range(LIMITS.daily_requests or 0):
        quota.reserve(f"r{i}", 0, 1)
        clock.advance(61)
    # When one more call asks
    # Then it is refused until the next local midnight
    with pytest.raises(QuotaExceeded, match="daily_requests") as refused:
        quota.reserve("late", 0, 1)
    assert "room returns at 2026-11-30T00:00:00+08:00" in str(refused.value)


def test_daily_tokens_limit(client, clock):
    # Given 900 of the day's 1000 tokens used
    quota = make(client, clock)
    quota.reserve("big", 0, 900)
    # When a call asks for 101 tokens, then for 100
    # Then the first is refused and names the limit, the second fits exactly
    with pytest.raises(QuotaExceeded, match=r"daily_tokens \(900 tokens used today \+ 101 asked"):
        quota.reserve("a", 0, 101)
    assert quota.has_room(100) is True
    quota.reserve("b", 0, 100)
    assert used(quota)["daily_tokens"] == 1_000


def test_a_request_larger_than_the_whole_limit_says_so(client, clock):
    quota = make(client, clock)
    with pytest.raises(QuotaExceeded, match="larger than the whole limit"):
        quota.reserve("huge", 0, 5_000)
    assert used(quota)["daily_requests"] == 0


def test_monthly_tokens_limit_spans_days(client, clock):
    # Given two days of 1000 tokens each in the same month
    clock.now = local(2026, 11, 10, 9, 0, 0)
    quota = make(client, clock)
    quota.reserve("d1", 0, 1_000)
    clock.advance(86_400)
    quota.reserve("d2", 0, 1_000)
    clock.advance(86_400)
    # When a third day asks for more than the month has left
    # Then the monthly limit refuses it, until the next local month
    with pytest.raises(QuotaExceeded, match="monthly_tokens") as refused:
        quota.reserve("d3", 0, 600)
    assert "2026-12-01T00:00:00+08:00" in str(refused.value)
    quota.reserve("d3", 0, 500)


def test_settle_charges_the_real_usage(client, clock):
    # Given a reservation of an estimated 300 tokens
    quota = make(client, clock)
    res = quota.reserve("req-1", 0, 300)
    # When it settles at 120
    quota.settle(res, 120)
    # Then 120 tokens and one request are counted
    assert used(quota) == {
        "rpm": 1,
        "daily_requests": 1,
        "daily_tokens": 120,
        "monthly_tokens": 120,
    }


def test_settle_above_the_estimate_charges_the_real_usage(client, clock):
    quota = make(client, clock)
    quota.settle(quota.reserve("req-1", 0, 100), 400)
    assert used(quota)["daily_tokens"] == 400


def test_release_of_a_failed_call_gives_back_tokens_but_not_the_request(client, clock):
    # Given a call that reserved 300 tokens, reached the provider, and failed without a bill
    quota = make(client, clock)
    res = quota.reserve("req-1", 0, 300)
    # When it is released
    quota.release(res)
    # Then the tokens are back but the provider still saw one request
    assert used(quota) == {"rpm": 1, "daily_requests": 1, "daily_tokens": 0, "monthly_tokens": 0}


def test_release_of_a_call_never_made_gives_back_everything(client, clock):
    # Given a reservation whose call never happened
    quota = make(client, clock)
    res = quota.reserve("req-1", 0, 300)
    # When it is released as not called
    quota.release(res, called=False)
    # Then nothing is counted, the RPM window included
    assert used(quota) == {"rpm": 0, "daily_requests": 0, "daily_tokens": 0, "monthly_tokens": 0}


def test_every_reservation_counts(client, clock):
    # A reservation is a count, not a record: making a call happen once is the attempt's job
    # (tests/aipool/attempt), so reserving the same name twice counts two calls
    quota = make(client, clock)
    quota.reserve("req-1", 0, 100)
    quota.reserve("req-1", 0, 100)
    assert used(quota)["daily_requests"] == 2


def test_restore_raises_counters_but_never_lowers_them(client, clock):
    # Given counters that survived with 300 tokens today
    quota = make(client, clock)
    quota.reserve("r", 0, 300)
    # When the ledger says 2 requests, 200 tokens today and 700 this month
    after = quota.restore(day_requests=2, day_tokens=200, month_tokens=700)
    # Then requests and month rise to the ledger, the higher day tokens stay
    assert after == {"daily_requests": 2, "daily_tokens": 300, "monthly_tokens": 700}
    assert used(quota)["monthly_tokens"] == 700


def test_restore_after_redis_lost_everything(client, clock):
    # Given Redis came back empty
    quota = make(client, clock)
    client.flushdb()
    # When the counters are restored from the ledger
    quota.restore(day_requests=5, day_tokens=900, month_tokens=2_000)
    # Then the limits apply again
    assert quota.has_room(1) is False
    with pytest.raises(QuotaExceeded, match="daily_requests"):
        quota.reserve("r", 0, 1)


def test_an_unlimited_provider_touches_no_redis(clock):
    # Given an unlimited provider over a client that fails on any command
    class NoCommands:
        def register_script(self, script: str) -> Any:
            return self.fail

        def fail(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("unlimited quota sent a Redis command")

        def __getattr__(self, name: str) -> Any:
            return self.fail

    quota = Quota(NoCommands(), "ollama", QuotaLimits(), clock=clock, tz=TAIPEI)
    # When it is used in every way
    res = quota.reserve("r", 0, 10_000_000)
    # Then every call answers without Redis
    assert res.unlimited
    quota.settle(res, 5)
    quota.release(res)
    assert quota.has_room(10**9) is True
    assert quota.usage()["monthly_tokens"] == {"used": None, "limit": None, "remaining": None}


def test_quotas_are_per_provider(client, clock):
    quotas = quotas_for(client, clock=clock, tz=TAIPEI)
    assert set(quotas) == set(PROVIDERS)
    quotas["claude"].reserve("r", 0, 1_000)
    assert quotas["gemini"].usage()["daily_tokens"]["used"] == 0
    assert quotas["claude"].usage()["daily_tokens"]["used"] == 1_000
