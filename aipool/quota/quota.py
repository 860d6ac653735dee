"""A quota per provider, shared by every worker process of the pool through Redis."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from aipool.errors import QuotaExceeded
from aipool.periods import Period, day_of, month_of, pool_zone
from aipool.quota.reservation import Reservation
from aipool.quota.storage import DAY_KEEP, MONTH_KEEP, NO_LIMIT, Counters, QuotaStore, counters
from aipool.settings import settings
from aipool.settings.provider_limits import ProviderLimits, QuotaLimits

_LIMITS = ("rpm", "daily_requests", "daily_tokens", "monthly_tokens")


class Quota:
    """One provider's four limits (ADR-006 §3), counted for the whole pool.

    - ``rpm``: a sliding window. Every call stays in the window for 60 s after it was counted, so
      no 60-second interval ever holds more than ``rpm`` calls, at any boundary.
    - ``daily_requests``, ``daily_tokens``, ``monthly_tokens``: calendar periods in ``tz``.

    A call reserves its estimated tokens before it runs, then is settled to its real usage or
    released. The pool's workers do that inside the attempt's own script (:mod:`aipool.attempt`),
    which also makes each call happen once; :meth:`reserve`, :meth:`settle` and :meth:`release`
    run the same Lua alone. A provider with no limit at all touches Redis for nothing.
    """

    def __init__(
        self,
        redis_client: Any,
        provider: str,
        limits: QuotaLimits,
        clock: Callable[[], float] = time.time,
        tz: ZoneInfo | None = None,
    ) -> None:
        self.provider = provider
        self.limits = limits
        self.clock = clock
        self.tz = tz if tz is not None else pool_zone()
        self._store = QuotaStore(redis_client, provider)

    @property
    def store(self) -> QuotaStore:
        """Where the counters live (their keys, for scripts that compose the quota's)."""
        return self._store

    def limit_values(self) -> list[int]:
        """rpm, daily_requests, daily_tokens, monthly_tokens as the scripts read them."""
        lim = self.limits
        return [
            _limit(lim.rpm),
            _limit(lim.daily_requests),
            _limit(lim.daily_tokens),
            _limit(lim.monthly_tokens),
        ]

    def periods(self, now: float) -> tuple[Period, Period]:
        """The local day and month holding ``now``."""
        return day_of(now, self.tz), month_of(now, self.tz)

    def room_args(self, now: float, tokens: int, day: Period, month: Period) -> list[Any]:
        """room.lua's arguments for a call of ``tokens`` at ``now``."""
        return [repr(now), int(tokens), *self.limit_values(), repr(day.end), repr(month.end)]

    def reserve(self, request_id: str, attempt: int, tokens: int) -> Reservation:
        """Count one call of ``tokens`` tokens, or raise ``QuotaExceeded``.

        The message names the limit that had no room and when room returns (for the RPM window,
        when the oldest call leaves it; for daily and monthly limits, the next local period at
        the latest). Every reservation counts: making a call happen once is the attempt's job.
        """
        now = self.clock()
        if self.limits.unlimited:
            return Reservation(self.provider, request_id, attempt, tokens, now, "", "", True)
        day, month = self.periods(now)
        name = f"{request_id}:{attempt}"
        reply = self._store.run_reserve(
            day.label,
            month.label,
            [
                *self.room_args(now, tokens, day, month),
                name,
                _ttl(day.end + DAY_KEEP - now),
                _ttl(month.end + MONTH_KEEP - now),
            ],
        )
        if reply[0] != "reserved":
            raise QuotaExceeded(self.refusal(reply[1:], tokens, now))
        return Reservation(
            self.provider,
            request_id,
            attempt,
            int(reply[1]),
            float(reply[2]),
            day.label,
            month.label,
        )

    def settle(self, res: Reservation, actual_tokens: int) -> None:
        """Charge the real usage instead of the estimate, to the day and month reserved in."""
        if not res.unlimited:
            self._store.adjust(res.day, res.month, int(actual_tokens) - res.tokens, False, res.name)

    def release(self, res: Reservation, *, called: bool = True) -> None:
        """Hand back a reservation that will not be settled.

        ``called=True`` (the call reached the provider and failed without a bill): its tokens come
        back, but it stays one request in the RPM window and the day's request count, because
        ADR-006's limits are on calls made to the provider. ``called=False`` (the call never
        happened): everything comes back.
        """
        if not res.unlimited:
            self._store.adjust(res.day, res.month, -res.tokens, not called, res.name)

    def has_room(self, tokens: int) -> bool:
        """Whether a call of ``tokens`` tokens would fit now; counts nothing."""
        if self.limits.unlimited:
            return True
        now = self.clock()
        day, month = self.periods(now)
        reply = self._store.run_room(
            day.label, month.label, self.room_args(now, tokens, day, month)
        )
        return reply[0] == "room"

    def usage(self) -> dict[str, Any]:
        """Used, limit and remaining for ``rpm``, ``daily_requests``, ``daily_tokens`` and
        ``monthly_tokens``, plus the ``day`` and ``month`` they cover; JSON-serialisable.

        ``limit`` and ``remaining`` are None when unlimited. A provider with no limit at all is not
        counted, so its ``used`` is None too (the usage ledger has its numbers).
        """
        now = self.clock()
        day, month = self.periods(now)
        lim = self.limits
        if lim.unlimited:
            used: dict[str, int | None] = dict.fromkeys(_LIMITS)
        else:
            c = self._store.read(now, day.label, month.label)
            used = {
                "rpm": c.window_requests,
                "daily_requests": c.day_requests,
                "daily_tokens": c.day_tokens,
                "monthly_tokens": c.month_tokens,
            }
        report: dict[str, Any] = {"day": day.label, "month": month.label}
        for name in _LIMITS:
            allowed = getattr(lim, name)
            count = used[name]
            remaining = None if allowed is None or count is None else max(0, allowed - count)
            report[name] = {"used": count, "limit": allowed, "remaining": remaining}
        return report

    def restore(self, day_requests: int, day_tokens: int, month_tokens: int) -> dict[str, int]:
        """Raise the current day's and month's counters to the ledger's totals after Redis lost
        them; a counter already higher is kept. Returns the counters after the update."""
        now = self.clock()
        day, month = self.periods(now)
        r, t, m = self._store.restore(
            day.label,
            month.label,
            [
                int(day_requests),
                int(day_tokens),
                int(month_tokens),
                _ttl(day.end + DAY_KEEP - now),
                _ttl(month.end + MONTH_KEEP - now),
            ],
        )
        return {"daily_requests": r, "daily_tokens": t, "monthly_tokens": m}

    def counters(self, replies: list[Any]) -> Counters:
        return counters(replies)

    def refusal(self, exceeded: list[str], tokens: int, now: float) -> str:
        """The message of a refusal ``[limit, retry_at, used, allowed]`` (room.lua's reply)."""
        limit, retry_at, used, allowed = (
            exceeded[0],
            float(exceeded[1]),
            int(exceeded[2]),
            int(exceeded[3]),
        )
        when = datetime.fromtimestamp(retry_at, self.tz).isoformat(timespec="seconds")
        wait = max(0.0, retry_at - now)
        if limit == "rpm":
            detail = f"{used} requests in the last 60 s, {allowed} allowed"
        elif limit == "daily_requests":
            detail = f"{used} requests today, {allowed} allowed"
        else:
            period = "today" if limit == "daily_tokens" else "this month"
            if tokens > allowed:
                return (
                    f"{self.provider} quota exceeded: {limit}: a request of {tokens} tokens is "
                    f"larger than the whole limit of {allowed}"
                )
            detail = f"{used} tokens used {period} + {tokens} asked > {allowed} allowed"
        return (
            f"{self.provider} quota exceeded: {limit} ({detail}); "
            f"room returns at {when} at the latest (in {wait:.0f} s)"
        )


def _limit(value: int | None) -> int:
    return NO_LIMIT if value is None else int(value)


def _ttl(seconds: float) -> int:
    return max(1, math.ceil(seconds))


def quotas_for(
    redis_client: Any,
    limits: Mapping[str, ProviderLimits] | None = None,
    *,
    clock: Callable[[], float] = time.time,
    tz: ZoneInfo | None = None,
) -> dict[str, Quota]:
    """One ``Quota`` per provider, from ``limits`` (default: the settings')."""
    chosen = settings().limits if limits is None else limits
    zone = tz if tz is not None else pool_zone()
    return {
        provider: Quota(redis_client, provider, pl.quota, clock, zone)
        for provider, pl in chosen.items()
    }
