"""Where the response cache keeps answers: Redis, bounded, and never in the way of an answer.

Layout (every key under ``aipool:cache:``)::

    e:<name>      an entry: the answer and what it cost (JSON), expiring after its rule's TTL
    lead:<name>   "<journey id>|<ms>": a request fetching this answer now (identical requests wait)
    lru           sorted set: entry name -> the number of its last keep or read (``uses``)
    uses          a counter: each keep or read takes the next number (no two alike, no clock)
    sizes         hash: entry name -> the bytes it is counted for
    bytes         the total counted

Bounded: the entries and their index are counted in bytes (:data:`ENTRY_OVERHEAD` per entry for
the index), and keeping one past ``AIPOOL_CACHE_MAX_BYTES`` evicts the least recently used until
the total fits again (``keep.lua``). An entry that expired by its TTL stays counted until the
eviction reaches it, so the count errs high and the cap holds. Answers longer than
:data:`MAX_ENTRY_BYTES` are not kept. Redis's own ``maxmemory-policy`` is not used: the pool's Redis
is also its broker and its breakers, which no eviction may touch.

Never in the way: a Redis that does not answer, refuses a write (full), or lost everything (a
restart, a flush) costs hits, never an answer: every operation here swallows ``RedisError`` and
says "miss". A lost lead makes the requests waiting on it lead themselves (a second call at
most).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from redis.exceptions import RedisError

from aipool.redis.lua import LuaScripts, text

log = logging.getLogger("aipool.cache")

PREFIX = "aipool:cache:"
ENTRY_PREFIX = f"{PREFIX}e:"
LRU_KEY = f"{PREFIX}lru"
SIZES_KEY = f"{PREFIX}sizes"
BYTES_KEY = f"{PREFIX}bytes"
USES_KEY = f"{PREFIX}uses"
#: What an entry costs beyond its own bytes: its key, its member in the index and in the sizes.
ENTRY_OVERHEAD = 256
#: The longest answer kept (bytes of its entry): a longer one is served once and forgotten.
MAX_ENTRY_BYTES = 256 * 1024

_SCRIPTS = LuaScripts("aipool.cache", "lookup", "keep", "release")


@dataclass(frozen=True)
class Entry:
    """A kept answer: its text and where it came from. No prompt: the key names it, hashed."""

    text: str
    provider: str
    model: str
    finish_reason: str
    input_tokens: int
    output_tokens: int
    #: What the answer cost when a provider gave it: what each hit saves.
    cost_usd: Decimal
    stored_at: float

    def to_json(self) -> str:
        return json.dumps(
            {
                "text": self.text,
                "provider": self.provider,
                "model": self.model,
                "finish_reason": self.finish_reason,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": str(self.cost_usd),
                "stored_at": self.stored_at,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, raw: str | bytes) -> Entry:
        data = json.loads(raw)
        return cls(
            text=str(data["text"]),
            provider=str(data["provider"]),
            model=str(data["model"]),
            finish_reason=str(data.get("finish_reason") or "stop"),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cost_usd=Decimal(str(data.get("cost_usd", "0"))),
            stored_at=float(data.get("stored_at", 0.0)),
        )

    @classmethod
    def of_result(cls, result: dict[str, Any]) -> Entry | None:
        """The entry a contract result gives, or None when it is no answer to replay: anything
        but ``status: ok`` with text and no tool call."""
        if result.get("status") != "ok" or result.get("tool_calls") or result.get("cached"):
            return None
        content = result.get("content")
        if not isinstance(content, str) or not content:
            return None
        usage = result.get("usage") or {}
        return cls(
            text=content,
            provider=str(result.get("provider") or ""),
            model=str(result.get("model") or ""),
            finish_reason=str(result.get("finish_reason") or "stop"),
            input_tokens=int(usage.get("input_tokens", 0)),
            output_tokens=int(usage.get("output_tokens", 0)),
            cost_usd=Decimal(str(result.get("cost_usd", 0))),
            stored_at=time.time(),
        )


@dataclass(frozen=True)
class Hit:
    """The answer is kept."""

    entry: Entry


@dataclass(frozen=True)
class Wait:
    """Another request is fetching this answer: it has for ``held_s``, and may for ``left_s``."""

    held_s: float
    left_s: float


@dataclass(frozen=True)
class Lead:
    """Nobody is fetching it: this request does (and others wait on it)."""


Lookup = Hit | Wait | Lead


class ResponseStore:
    """The response cache's entries and leads on one Redis."""

    def __init__(self, client: Any, *, max_bytes: int, lead_s: float) -> None:
        self.client = client
        self.max_bytes = max_bytes
        self.lead_ms = max(1, int(lead_s * 1000))

    def _scripts(self) -> dict[str, Any]:
        return _SCRIPTS.for_client(self.client)

    def lookup(self, name: str, journey_id: str) -> Lookup:
        """The entry named ``name``; else whether to wait for another request's answer or lead.
        A Redis that does not answer: lead (no one waits on a lead nobody can see)."""
        try:
            reply = self._scripts()["lookup"](
                keys=[ENTRY_PREFIX + name, f"{PREFIX}lead:{name}", LRU_KEY, USES_KEY],
                args=[name, journey_id, self.lead_ms],
            )
        except RedisError:
            log.warning("response cache unreadable; answering without it", exc_info=True)
            return Lead()
        kind = text(reply[0])
        if kind == "hit":
            try:
                return Hit(Entry.from_json(reply[1]))
            except (ValueError, KeyError, TypeError):
                log.warning("unreadable cache entry %s…; asking a provider", name[:12])
                return Lead()
        if kind == "wait":
            return Wait(int(reply[1]) / 1000, max(0, int(reply[2])) / 1000)
        return Lead()

    def keep(self, name: str, entry: Entry, ttl_s: int, journey_id: str) -> bool:
        """Keep ``entry`` for ``ttl_s`` and release the lead if ``journey_id`` holds it; whether
        it was kept (not when too long, or when Redis refused it)."""
        payload = entry.to_json()
        if len(payload.encode("utf-8")) > MAX_ENTRY_BYTES:
            self.release(name, journey_id)
            return False
        try:
            self._scripts()["keep"](
                keys=[
                    ENTRY_PREFIX + name,
                    f"{PREFIX}lead:{name}",
                    LRU_KEY,
                    SIZES_KEY,
                    BYTES_KEY,
                    USES_KEY,
                ],
                args=[
                    name,
                    payload,
                    ttl_s * 1000,
                    self.max_bytes,
                    journey_id,
                    ENTRY_PREFIX,
                    ENTRY_OVERHEAD,
                ],
            )
        except RedisError:
            log.warning("answer not kept in the response cache", exc_info=True)
            return False
        return True

    def release(self, name: str, journey_id: str) -> None:
        """Give up the lead ``journey_id`` holds on ``name`` (it ended without an answer to keep):
        the requests waiting on it look again."""
        try:
            self._scripts()["release"](keys=[f"{PREFIX}lead:{name}"], args=[journey_id])
        except RedisError:
            log.debug("lead not released; it expires by itself", exc_info=True)

    def counted_bytes(self) -> int:
        """The bytes the cache counts now (entries and their index)."""
        return int(self.client.get(BYTES_KEY) or 0)
