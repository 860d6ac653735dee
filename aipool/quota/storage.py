"""Where a provider's quota lives in Redis, and the scripts that change it.

Keys, all under ``aipool:quota:{provider}:``::

    window              sorted set: call -> time counted, the last 60 s (requests per minute)
    day:{YYYY-MM-DD}    hash: requests, tokens of that local day; expires a week after it ends
    month:{YYYY-MM}     hash: tokens of that local month; expires five weeks after it ends

Changes run in Lua so each check-and-count is one atomic step for the whole pool. The scripts are
function-sized files (``room``, ``reserve``, ``adjust``, ``restore``) that the attempt's own script
composes (:mod:`aipool.attempt`), which is how the pool's workers use them; run alone, here, they
serve reports, the beat's restore, and tests of the counting itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aipool.redis.lua import LuaScripts, compose, source, text

ROOM = source("aipool.quota", "room")
#: ``reserve.lua`` with the ``room`` function it calls.
RESERVE = compose(source("aipool.quota", "reserve"), room=ROOM)
ADJUST = source("aipool.quota", "adjust")

_SCRIPTS = LuaScripts(
    "aipool.quota", "restore", composed={"room": ROOM, "reserve": RESERVE, "adjust": ADJUST}
)

#: How long a day's and a month's counters outlive their period (seconds): long enough for
#: reports on yesterday and last month, short enough that Redis does not grow without bound.
DAY_KEEP = 7 * 86400
MONTH_KEEP = 35 * 86400
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
        scripts = _SCRIPTS.for_client(redis_client)
        self._room = scripts["room"]
        self._reserve = scripts["reserve"]
        self._adjust = scripts["adjust"]
        self._restore = scripts["restore"]

    def day_key(self, label: str) -> str:
        return f"{self.prefix}:day:{label}"

    def month_key(self, label: str) -> str:
        return f"{self.prefix}:month:{label}"

    def keys(self, day: str, month: str) -> list[str]:
        """The three keys room, reserve and adjust take: window, day, month."""
        return [self.window_key, self.day_key(day), self.month_key(month)]

    def run_room(self, day: str, month: str, args: list[Any]) -> list[str]:
        return [text(v) for v in self._room(keys=self.keys(day, month), args=args)]

    def run_reserve(self, day: str, month: str, args: list[Any]) -> list[str]:
        return [text(v) for v in self._reserve(keys=self.keys(day, month), args=args)]

    def adjust(self, day: str, month: str, tokens: int, uncount: bool, member: str) -> None:
        keys = [self.day_key(day), self.month_key(month), self.window_key]
        self._adjust(keys=keys, args=[int(tokens), "1" if uncount else "0", member])

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
