"""Whether the pool's Redis keeps on disk what waits in it, and what a restart loses if not.

Money waits in Redis: requests queued for a provider, usage records not yet drained into the
ledger (calls already paid for), quota counters and breaker states. A Redis with neither an
append-only file (AOF) nor RDB snapshots loses all of it when it restarts. A worker asks once at
start (:func:`persistence_warning`) and warns, naming what would be lost.

``CONFIG GET`` says how the server is set up. Managed services often refuse ``CONFIG``; then
``INFO persistence`` tells whether AOF is on and whether the server ever saved a snapshot, and a
server that answers neither is given the benefit of the doubt (nothing is said).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

#: What a restart without persistence loses, as an operator needs to hear it.
LOSSES = (
    "the requests waiting in its queues (their producers wait in vain), "
    "the usage records not yet drained into the ledger (calls already paid for go unbooked: "
    "budgets and reports miss them), breaker states and the per-minute windows; "
    "daily and monthly quota counters come back from the ledger within a minute"
)


@dataclass(frozen=True)
class Persistence:
    """How a Redis server keeps its data: ``None`` where it could not be told."""

    aof: bool | None
    rdb: bool | None

    @property
    def keeps_nothing(self) -> bool:
        """Certain that a restart loses everything."""
        return self.aof is False and self.rdb is False


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def persistence(client: Any) -> Persistence:
    """Ask ``client``'s server how it persists; never raises for a server that refuses."""
    try:
        config = client.config_get("appendonly")
        config.update(client.config_get("save"))
        settings = {_text(k): _text(v) for k, v in config.items()}
        if "appendonly" in settings:
            return Persistence(
                aof=settings["appendonly"] == "yes", rdb=bool(settings.get("save", "").strip())
            )
    except RedisError:
        pass  # CONFIG is refused or renamed on many managed services
    try:
        info = client.info("persistence")
    except RedisError:
        return Persistence(None, None)
    aof = info.get("aof_enabled")
    saves = info.get("rdb_saves")
    return Persistence(
        aof=None if aof is None else bool(int(aof)),
        rdb=None if saves is None else (int(saves) > 0 or None),
    )


def persistence_warning(client: Any, where: str) -> str | None:
    """One line for an operator when the Redis at ``where`` keeps nothing on disk, else None."""
    if not persistence(client).keeps_nothing:
        return None
    return (
        f"Redis at {where} keeps nothing on disk (no AOF, no RDB snapshots): a restart loses "
        f"{LOSSES}. Turn on its append-only file (appendonly yes, appendfsync everysec); "
        "see docs/spend.md, Persistence"
    )
