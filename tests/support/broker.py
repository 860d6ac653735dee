"""What is left on the Redis broker: messages queued, or taken by a worker and never acknowledged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.support.waiting import eventually

#: kombu's Redis transport keeps messages a worker took, until acknowledged, in this hash.
UNACKED_KEY = "unacked"


def leftover_messages(client: Any) -> dict[str, int]:
    """Messages still in a queue (any list outside the pool's own ``aipool:`` keys) or
    unacknowledged, by queue name (``unacked`` for the latter); empty when nothing is left."""
    left = {
        key.decode(): int(client.llen(key))
        for key in client.scan_iter(_type="list")
        if not key.startswith(b"aipool:")
    }
    unacked = int(client.hlen(UNACKED_KEY))
    if unacked:
        left[UNACKED_KEY] = unacked
    return left


def wait_idle(client: Any, queues: Iterable[str], timeout: float = 60.0) -> None:
    """Wait until no message waits in ``queues`` or is held unacknowledged (the redeliveries are
    done)."""
    names = tuple(queues)
    eventually(
        lambda: sum(client.llen(q) for q in names) + client.hlen(UNACKED_KEY) == 0,
        timeout,
        "the broker emptied",
    )
