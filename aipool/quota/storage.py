"""Where a provider's quota lives in Redis, and the scripts that change it.

Keys, all under ``aipool:quota:{provider}:``::

    window              sorted set: reservation -> time reserved, the last 60 s (requests per minute)
    day:{YYYY-MM-DD}    hash: requests, tokens of that local day; expires a week after it ends
    month:{YYYY-MM}     hash: tokens of that local month; expires five weeks after it ends
    res:{request}:{n}   hash: one reservation (state, tokens, at, day, month); kept three days so
                        a redelivered message finds it
    open                sorted set: reservations not yet settled or released, by time reserved
    answer:{request}:{n} the completion of a settled reservation (JSON), kept only while its
                        message can be redelivered (the visibility timeout plus the hard limit)

Changes run in Lua so each check-and-reserve is one atomic step for the whole pool; reads for
dispatch and reports are one pipelined round trip that changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aipool.redis_lua import LuaScripts, evalsha_in, text

_SCRIPTS = LuaScripts("aipool.quota", "reserve", "settle", "release", "restore")

#: How long a day's and a month's counters outlive their period (seconds): long enough for
#: reports on yesterday and last month, short enough that Redis does not grow without bound.
DAY_KEEP = 7 * 86400
MONTH_KEEP = 35 * 86400
#: How long a reservation record is kept, so a message redelivered late is still recognised.
RECORD_KEEP = 3 * 86400
#: Unlimited, as the scripts read it.
NO_LIMIT = -1


@dataclass(frozen=True)
class Counters:
    """The counters as read at one instant."""

    window_requests: int
    day_requests: int
    day_tokens: int
    month_tokens: int


def counters(replies: list[Any]) -> Counters:
    """The counters from the replies of :meth:`QuotaStore.read_in`'s commands."""
    window, (day_requests, day_tokens), month_tokens = replies
    return Counters(
        int(window), int(day_requests or 0), int(day_tokens or 0), int(month_tokens or 0)
    )


class QuotaStore:
    """The Redis side of one provider's quota."""

    def __init__(self, redis_client: Any, provider: str) -> None:
        self.redis = redis_client
        self.prefix = f"aipool:quota:{provider}"
        self.window_key = f"{self.prefix}:window"
        self.open_key = f"{self.prefix}:open"
        scripts = _SCRIPTS.for_client(redis_client)
        self._reserve = scripts["reserve"]
        self._settle = scripts["settle"]
        self._release = scripts["release"]
        self._restore = scripts["restore"]

    def day_key(self, label: str) -> str:
        return f"{self.prefix}:day:{label}"

    def month_key(self, label: str) -> str:
        return f"{self.prefix}:month:{label}"

    def record_key(self, name: str) -> str:
        return f"{self.prefix}:res:{name}"

    def answer_key(self, name: str) -> str:
        return f"{self.prefix}:answer:{name}"

    def reserve_keys(self, name: str, day: str, month: str) -> list[str]:
        return [
            self.record_key(name),
            self.window_key,
            self.day_key(day),
            self.month_key(month),
            self.open_key,
            self.answer_key(name),
        ]

    def run_reserve(self, keys: list[str], args: list[Any]) -> list[str]:
        return [text(v) for v in self._reserve(keys=keys, args=args)]

    def _settle_call(
        self, name: str, day: str, month: str, actual: int, answer: str, keep: int
    ) -> tuple[list[str], list[Any]]:
        keys = [
            self.record_key(name),
            self.day_key(day),
            self.month_key(month),
            self.open_key,
            self.answer_key(name),
        ]
        return keys, [actual, name, answer, keep]

    def settle(
        self, name: str, day: str, month: str, actual: int, answer: str = "", keep: int = 1
    ) -> str:
        keys, args = self._settle_call(name, day, month, actual, answer, keep)
        return text(self._settle(keys=keys, args=args)[0])

    def settle_in(
        self, pipe: Any, name: str, day: str, month: str, actual: int, answer: str, keep: int
    ) -> None:
        keys, args = self._settle_call(name, day, month, actual, answer, keep)
        evalsha_in(pipe, self._settle, keys, args)

    def _release_keys(self, name: str, day: str, month: str) -> list[str]:
        return [
            self.record_key(name),
            self.day_key(day),
            self.month_key(month),
            self.open_key,
            self.window_key,
        ]

    def release(self, name: str, day: str, month: str, mode: str) -> str:
        keys = self._release_keys(name, day, month)
        return text(self._release(keys=keys, args=[mode, name])[0])

    def release_in(self, pipe: Any, name: str, day: str, month: str, mode: str) -> None:
        evalsha_in(pipe, self._release, self._release_keys(name, day, month), [mode, name])

    def restore(self, day: str, month: str, args: list[Any]) -> list[int]:
        reply = self._restore(keys=[self.day_key(day), self.month_key(month)], args=args)
        return [int(v) for v in reply]

    def read(self, now: float, day: str, month: str) -> Counters:
        pipe = self.redis.pipeline(transaction=False)
        self.read_in(pipe, now, day, month)
        return counters(pipe.execute())

    def read_in(self, pipe: Any, now: float, day: str, month: str) -> int:
        """Queue :meth:`read`'s commands on ``pipe``; returns how many replies they add."""
        pipe.zcount(self.window_key, f"({now - 60.0!r}", "+inf")
        pipe.hmget(self.day_key(day), ["requests", "tokens"])
        pipe.hget(self.month_key(month), "tokens")
        return 3

    def stale(self, before: float) -> list[str]:
        """Names of open reservations made at or before ``before``."""
        return [text(v) for v in self.redis.zrangebyscore(self.open_key, "-inf", repr(before))]

    def periods_of(self, name: str) -> tuple[str, str] | None:
        day, month = self.redis.hmget(self.record_key(name), ["day", "month"])
        if day is None or month is None:
            return None
        return text(day), text(month)

    def forget_open(self, name: str) -> None:
        self.redis.zrem(self.open_key, name)
