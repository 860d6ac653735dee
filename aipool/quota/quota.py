"""A quota per provider, shared by every worker process of the pool through Redis."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from aipool.errors import QuotaExceeded
from aipool.periods import day_of, month_of, pool_zone
from aipool.quota.reservation import Reservation
from aipool.quota.storage import (
    DAY_KEEP,
    MONTH_KEEP,
    NO_LIMIT,
    RECORD_KEEP,
    Counters,
    QuotaStore,
    counters,
)
from aipool.settings import settings
from aipool.settings.provider_limits import ProviderLimits, QuotaLimits


@dataclass(frozen=True)
class ReserveCall:
    """One prepared ``reserve.lua`` run: what it reserves, when, and its keys and arguments."""

    request_id: str
    attempt: int
    tokens: int
    now: float
    keys: list[str]
    args: list[Any]


def default_reservation_ttl() -> float:
    """Seconds after which a reservation with no outcome is presumed left by a dead worker: a live
    one settles or releases within the task's hard time limit, and the broker redelivers a dead
    worker's message after the visibility timeout, which is the bound both follow."""
    return float(settings().effective_visibility_timeout_s)


def answer_keep_s() -> int:
    """How long a settled call's answer is kept for a redelivery of its message: a message is
    redelivered at most a visibility timeout after it was taken, and held at most a hard limit."""
    return int(2 * default_reservation_ttl())


WINDOW = 60.0


class Quota:
    """One provider's four limits, checked and reserved in one atomic step per call.

    - ``rpm``: a sliding window. Every reservation stays in the window for 60 s after it was made,
      so no 60-second interval ever holds more than ``rpm`` reservations, at any boundary.
    - ``daily_requests``, ``daily_tokens``, ``monthly_tokens``: calendar periods in ``tz``.

    A call reserves its estimated tokens before it runs (``reserve``), then either ``settle``s to
    the real usage or ``release``s. Reservations are named by (request id, attempt), so a
    redelivered message never reserves or charges twice. A provider with no limit at all touches
    Redis for nothing.
    """

    def __init__(
        self,
        redis_client: Any,
        provider: str,
        limits: QuotaLimits,
        clock: Callable[[], float] = time.time,
        tz: ZoneInfo | None = None,
        reservation_ttl: float | None = None,
    ) -> None:
        self.provider = provider
        self.limits = limits
        self.clock = clock
        self.tz = tz if tz is not None else pool_zone()
        self.reservation_ttl = (
            default_reservation_ttl() if reservation_ttl is None else reservation_ttl
        )
        self.answer_keep = answer_keep_s()
        self._store = QuotaStore(redis_client, provider)

    def reserve(self, request_id: str, attempt: int, tokens: int) -> Reservation:
        """Reserve one call and ``tokens`` tokens, or raise ``QuotaExceeded``.

        The message names the limit that had no room and when room returns (for the RPM window,
        when the oldest reservation leaves it; for daily and monthly limits, the next local
        period at the latest). Reserving an existing (request id, attempt) again returns that
        reservation unchanged and counts nothing; one released with ``called=False`` or swept
        counted nothing, so it is reserved afresh.
        """
        call = self.reserve_call(request_id, attempt, tokens)
        if call is None:
            return self.unlimited_reservation(request_id, attempt, tokens)
        return self.reservation_from(self._store.run_reserve(call.keys, call.args), call)

    def unlimited_reservation(self, request_id: str, attempt: int, tokens: int) -> Reservation:
        """Nothing is counted, so no period is charged: the hot path of a local model stays a
        few microseconds of Python."""
        return Reservation(
            self.provider, request_id, attempt, tokens, self.clock(), "", "", unlimited=True
        )

    def reserve_call(self, request_id: str, attempt: int, tokens: int) -> ReserveCall | None:
        """Keys and arguments of one ``reserve.lua`` run (alone, or composed with the breaker's
        admission into one script); ``None`` for a provider with no limit at all."""
        if self.limits.unlimited:
            return None
        now = self.clock()
        day, month = day_of(now, self.tz), month_of(now, self.tz)
        name = f"{request_id}:{attempt}"
        return ReserveCall(
            request_id,
            attempt,
            int(tokens),
            now,
            self._store.reserve_keys(name, day.label, month.label),
            [
                repr(now),
                int(tokens),
                _limit(self.limits.rpm),
                _limit(self.limits.daily_requests),
                _limit(self.limits.daily_tokens),
                _limit(self.limits.monthly_tokens),
                name,
                _ttl(day.end + DAY_KEEP - now),
                _ttl(month.end + MONTH_KEEP - now),
                RECORD_KEEP,
                repr(day.end),
                repr(month.end),
                day.label,
                month.label,
            ],
        )

    def reservation_from(self, reply: list[str], call: ReserveCall) -> Reservation:
        """The reservation ``reserve.lua`` made (or found), or ``QuotaExceeded``."""
        if reply[0] == "exceeded":
            limit, retry_at, used, allowed = reply[1], float(reply[2]), int(reply[3]), int(reply[4])
            raise QuotaExceeded(
                self._refusal(limit, retry_at, used, allowed, call.tokens, call.now)
            )
        _, state, counted, at, res_day, res_month, *kept = reply
        return Reservation(
            self.provider,
            call.request_id,
            call.attempt,
            int(counted),
            float(at),
            res_day,
            res_month,
            state,
            answer=kept[0] if kept else "",
        )

    def settle(self, res: Reservation, actual_tokens: int, answer: str = "") -> bool:
        """Charge the real usage instead of the estimate; returns whether anything changed.

        Only an open reservation settles; settling it again, or after ``release``, does nothing.
        The call still counts as one request. Tokens are charged to the day and month it was
        reserved in. ``answer`` (the completion as JSON) is kept beside it for
        :func:`answer_keep_s` seconds, so a redelivered message returns it instead of calling the provider again.
        """
        if res.unlimited:
            return False
        changed = self._store.settle(
            res.name, res.day, res.month, int(actual_tokens), answer, self.answer_keep
        )
        return changed == "reserved"

    def settle_in(self, pipe: Any, res: Reservation, actual_tokens: int, answer: str = "") -> None:
        """Queue :meth:`settle` on ``pipe``, to run with the breaker's outcome in one round trip."""
        self._store.settle_in(
            pipe, res.name, res.day, res.month, int(actual_tokens), answer, self.answer_keep
        )

    def release_in(self, pipe: Any, res: Reservation, *, called: bool = True) -> None:
        """Queue :meth:`release` on ``pipe``."""
        self._store.release_in(
            pipe, res.name, res.day, res.month, "released" if called else "cancelled"
        )

    def release(self, res: Reservation, *, called: bool = True) -> bool:
        """Hand back a reservation that will not be settled; returns whether anything changed.

        ``called=True`` (the call reached the provider and failed): its tokens come back, but it
        stays one request in the RPM window and the day's request count, because ADR-006's limits
        are on calls made to the provider. ``called=False`` (the call never happened: the breaker
        refused after the reservation, the deadline passed): everything comes back. Idempotent.
        """
        if res.unlimited:
            return False
        mode = "released" if called else "cancelled"
        return self._store.release(res.name, res.day, res.month, mode) == "reserved"

    def has_room(self, tokens: int) -> bool:
        """Whether a call of ``tokens`` tokens would fit now; reserves nothing (dispatch peek)."""
        if self.limits.unlimited:
            return True
        return self._fits(self._read(self.clock()), tokens)

    def peek_in(self, pipe: Any) -> int:
        """Queue :meth:`has_room`'s reads on ``pipe``; returns how many replies they add (none
        for a provider with no limit). Answer with :meth:`has_room_from`."""
        if self.limits.unlimited:
            return 0
        now = self.clock()
        return self._store.read_in(
            pipe, now, day_of(now, self.tz).label, month_of(now, self.tz).label
        )

    def has_room_from(self, replies: list[Any], tokens: int) -> bool:
        return self.limits.unlimited or self._fits(counters(replies), tokens)

    def _fits(self, c: Counters, tokens: int) -> bool:
        lim = self.limits
        return (
            (lim.rpm is None or c.window_requests < lim.rpm)
            and (lim.daily_requests is None or c.day_requests + 1 <= lim.daily_requests)
            and (lim.daily_tokens is None or c.day_tokens + tokens <= lim.daily_tokens)
            and (lim.monthly_tokens is None or c.month_tokens + tokens <= lim.monthly_tokens)
        )

    def usage(self) -> dict[str, Any]:
        """Used, limit and remaining for ``rpm``, ``daily_requests``, ``daily_tokens`` and
        ``monthly_tokens``, plus the ``day`` and ``month`` they cover; JSON-serialisable.

        ``limit`` and ``remaining`` are None when unlimited. A provider with no limit at all is not
        counted, so its ``used`` is None too (the usage ledger has its numbers).
        """
        now = self.clock()
        day, month = day_of(now, self.tz), month_of(now, self.tz)
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

    def sweep_stale(self) -> int:
        """Hand back in full every reservation older than ``reservation_ttl`` with no outcome
        (its worker died); returns how many were handed back by this call."""
        if self.limits.unlimited:
            return 0
        swept = 0
        for name in self._store.stale(self.clock() - self.reservation_ttl):
            periods = self._store.periods_of(name)
            if periods is None:
                self._store.forget_open(name)
                continue
            if self._store.release(name, periods[0], periods[1], "cancelled") == "reserved":
                swept += 1
        return swept

    def restore(self, day_requests: int, day_tokens: int, month_tokens: int) -> dict[str, int]:
        """Raise the current day's and month's counters to the ledger's totals after Redis lost
        them; a counter already higher is kept. Returns the counters after the update."""
        now = self.clock()
        day, month = day_of(now, self.tz), month_of(now, self.tz)
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

    def _read(self, now: float) -> Counters:
        return self._store.read(now, day_of(now, self.tz).label, month_of(now, self.tz).label)

    def _refusal(
        self, limit: str, retry_at: float, used: int, allowed: int, tokens: int, now: float
    ) -> str:
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


_LIMITS = ("rpm", "daily_requests", "daily_tokens", "monthly_tokens")


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
    reservation_ttl: float | None = None,
) -> dict[str, Quota]:
    """One ``Quota`` per provider, from ``limits`` (default: the settings')."""
    chosen = settings().limits if limits is None else limits
    zone = tz if tz is not None else pool_zone()
    return {
        provider: Quota(redis_client, provider, pl.quota, clock, zone, reservation_ttl)
        for provider, pl in chosen.items()
    }
