"""Where the pool's Redis master is, and how far behind each of its replicas is: what
``aipool status`` shows of a Redis that can fail over (``docs/operations.md``, Redis Sentinel).

Read from the master the pool's client reaches: on Sentinel, the address the sentinels name now
(it changes at a failover); ``INFO replication`` there gives each replica its state, the seconds
since its last acknowledgement (``lag``: replicas acknowledge every second, so 0 or 1 is healthy)
and how many bytes of the master's replication stream it has yet to acknowledge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError


@dataclass(frozen=True)
class ReplicaLag:
    """One replica as its master sees it."""

    address: str
    #: ``online``, or the sync it is in (``wait_bgsave``, ``send_bulk``).
    state: str
    #: Seconds since it last acknowledged the master's stream.
    lag_s: int
    #: Bytes of the master's stream it has not acknowledged yet.
    behind_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "state": self.state,
            "lag_s": self.lag_s,
            "behind_bytes": self.behind_bytes,
        }


@dataclass(frozen=True)
class Replication:
    """The master the pool writes to, the Sentinel name it is known by (``None``: not on
    Sentinel), and its replicas."""

    master: str
    sentinel_master: str | None
    replicas: tuple[ReplicaLag, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "master": self.master,
            "sentinel_master": self.sentinel_master,
            "replicas": [r.to_json() for r in self.replicas],
        }


def read_replication(client: Any) -> Replication | None:
    """The replication of the Redis ``client`` writes to; ``None`` for one Redis without
    replicas (nothing to show) or when it cannot be read (a failover in progress: status shows
    the rest)."""
    pool = client.connection_pool
    name = getattr(pool, "service_name", None)
    try:
        info = client.info("replication")
        if name is not None:
            host, port = pool.get_master_address()
        else:
            host, port = pool.connection_kwargs.get("host"), pool.connection_kwargs.get("port")
    except RedisError:
        return None
    replicas = tuple(_replicas(info))
    if name is None and not replicas:
        return None
    return Replication(f"{host}:{port}", name, replicas)


def _replicas(info: dict[str, Any]) -> list[ReplicaLag]:
    top = int(info.get("master_repl_offset", 0) or 0)
    found = []
    for key in sorted(k for k in info if k.startswith("slave") and k[5:].isdigit()):
        entry = info[key]
        if not isinstance(entry, dict):
            continue
        found.append(
            ReplicaLag(
                f"{entry.get('ip')}:{entry.get('port')}",
                str(entry.get("state", "")),
                int(entry.get("lag", 0) or 0),
                max(0, top - int(entry.get("offset", 0) or 0)),
            )
        )
    return found
