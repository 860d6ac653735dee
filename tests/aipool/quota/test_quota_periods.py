"""Days and months are calendar periods in the pool's time zone."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from aipool.errors import QuotaExceeded
from aipool.periods import day_of, month_of, pool_zone
from aipool.quota import Quota
from aipool.settings.provider_limits import QuotaLimits

TAIPEI = ZoneInfo("Asia/Taipei")


def local(*args: int) -> float:
    return datetime(*args, tzinfo=TAIPEI).timestamp()  # type: ignore[misc]


def test_the_last_and_first_second_of_a_taipei_day_are_different_days():
    # Given 23:59:59 and 00:00:00 local time in Taipei (15:59:59 and 16:00:00 UTC)
    before, after = local(2026, 11, 29, 23, 59, 59), local(2026, 11, 30, 0, 0, 0)
    # Then they fall in different days, and the first day ends at the second instant
    assert day_of(before, TAIPEI).label == "2026-11-29"
    assert day_of(after, TAIPEI).label == "2026-11-30"
    assert day_of(before, TAIPEI).end == after
    # and in UTC both are on the 29th: the calendar is local, not UTC
    assert datetime.fromtimestamp(after, ZoneInfo("UTC")).day == 29


def test_the_last_and_first_second_of_a_taipei_month_are_different_months():
    before, after = local(2026, 11, 30, 23, 59, 59), local(2026, 12, 1, 0, 0, 0)
    assert month_of(before, TAIPEI).label == "2026-11"
    assert month_of(after, TAIPEI).label == "2026-12"
    assert month_of(before, TAIPEI).end == after
    assert month_of(local(2026, 12, 31, 23, 59, 59), TAIPEI).end == local(2027, 1, 1)


def test_the_zone_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("AIPOOL_TIMEZONE", raising=False)
    assert pool_zone() == TAIPEI
    monkeypatch.setenv("AIPOOL_TIMEZONE", "Europe/Berlin")
    assert pool_zone() == ZoneInfo("Europe/Berlin")


def test_daily_quota_has_room_again_at_local_midnight(client, clock):
    # Given the day's tokens all used at 23:59:59 Taipei time
    clock.now = local(2026, 11, 29, 23, 59, 59)
    quota = Quota(client, "gemini", QuotaLimits(daily_tokens=100), clock=clock, tz=TAIPEI)
    quota.reserve("a", 0, 100)
    with pytest.raises(QuotaExceeded, match="2026-11-30T00:00:00"):
        quota.reserve("b", 0, 1)
    # When the clock reaches 00:00:00 local
    clock.now = local(2026, 11, 30, 0, 0, 0)
    # Then the new day has room, kept under its own key
    quota.reserve("b", 0, 100)
    keys = {k.decode() for k in client.keys("aipool:quota:gemini:day:*")}
    assert keys == {"aipool:quota:gemini:day:2026-11-29", "aipool:quota:gemini:day:2026-11-30"}


def test_a_reservation_settled_after_midnight_adjusts_the_day_it_was_made(client, clock):
    clock.now = local(2026, 11, 29, 23, 59, 59)
    quota = Quota(client, "gemini", QuotaLimits(daily_tokens=1_000), clock=clock, tz=TAIPEI)
    res = quota.reserve("a", 0, 500)
    clock.now = local(2026, 11, 30, 0, 0, 5)
    quota.settle(res, 200)
    assert int(client.hget("aipool:quota:gemini:day:2026-11-29", "tokens")) == 200
    assert quota.usage()["daily_tokens"]["used"] == 0


def test_monthly_quota_has_room_again_in_the_next_local_month(client, clock):
    clock.now = local(2026, 11, 30, 23, 59, 59)
    quota = Quota(client, "claude", QuotaLimits(monthly_tokens=100), clock=clock, tz=TAIPEI)
    quota.reserve("a", 0, 100)
    with pytest.raises(QuotaExceeded, match="monthly_tokens"):
        quota.reserve("b", 0, 1)
    clock.now = local(2026, 12, 1, 0, 0, 0)
    quota.reserve("b", 0, 100)
    assert quota.usage()["month"] == "2026-12"


def test_period_keys_expire_after_their_period(client, clock):
    clock.now = local(2026, 11, 29, 12, 0, 0)
    quota = Quota(client, "gemini", QuotaLimits(daily_tokens=1_000), clock=clock, tz=TAIPEI)
    quota.reserve("a", 0, 1)
    day_ttl = client.ttl("aipool:quota:gemini:day:2026-11-29")
    month_ttl = client.ttl("aipool:quota:gemini:month:2026-11")
    # twelve hours left today plus a week; a day and a half left this month plus five weeks
    assert 12 * 3600 + 7 * 86400 - 5 <= day_ttl <= 12 * 3600 + 7 * 86400
    assert 36 * 3600 + 35 * 86400 - 5 <= month_ttl <= 36 * 3600 + 35 * 86400
