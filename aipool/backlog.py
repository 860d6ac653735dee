"""The backlog of each lane: how many messages wait, and how long the oldest has waited.

A Redis list keeps no times, and a producer's clock is not the pool's (issue #20). So the pool
stamps each waiting message the first time one of its components sees it, on Redis's clock:
:func:`sight` (one script, ``backlog.lua``) looks at the newest and the oldest messages of each
lane and stamps every task id it has not stamped yet, then answers the lane's length and the age
of its oldest message. Every worker sights the lanes it consumes once a second
(:mod:`workers.backlog`), the maintenance worker at each Prometheus scrape, ``aipool status`` when
it runs. A message is stamped within a second of reaching either end of its list, so ages are
exact to about a second (a burst of more than :data:`ENDS` messages in a second is stamped when it
reaches the oldest end, and counts from then).

The stamps serve twice: as the age gauges (``aipool_queue_oldest_age_seconds``) and as the moment a
request sent by name was first seen by the pool: the router counts its ``deadline_s`` from there
(:func:`first_seen`), so time spent waiting in the router queue counts against it (issue #29).

Only the Redis broker has lists to look at: with RabbitMQ the lengths come from the broker and no
age is measured (RabbitMQ's management plugin has its own ``head_message_timestamp``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from aipool.contract.vocabulary import Outcome
from aipool.redis.lua import LuaScripts, text

_SCRIPTS = LuaScripts("aipool", "backlog")
#: The outcome of a hop passed over because its lane's oldest message has waited as long as the
#: request's deadline leaves (aipool.attempt.runner).
QUEUE_WAIT: Outcome = "queue_wait"
#: How many messages are looked at at each end of a list per sighting.
ENDS = 50
#: How long a lane's stamps live after its last sighting.
STAMPS_KEEP_S = 86_400
#: The most stamps a lane keeps (a lane that never empties forgets the messages that passed).
MAX_STAMPS = 50_000
#: How long a lane's stamps outlive its last waiting message: the router worker that has just
#: popped a request reads its stamp after the pop, and another worker's sighting of the emptied
#: lane may come in between (deleting them at once lost the queue wait of a request now and then:
#: a few ms between pop and read, against one sighting a second from every worker of the lane).
STAMPS_AFTER_EMPTY_S = 60


def stamps_key(lane: str) -> str:
    """The hash of ``lane``'s stamps: task id → when the pool first saw it waiting."""
    return f"aipool:seen:{lane}"


@dataclass(frozen=True)
class Backlog:
    """One lane's backlog: messages waiting, and how long the oldest has waited (s)."""

    length: int
    oldest_age_s: float


def sight(client: Any, lanes: Iterable[str]) -> dict[str, Backlog]:
    """Stamp the messages now at either end of each of ``lanes``; their backlogs."""
    names = list(lanes)
    if not names:
        return {}
    keys = [key for lane in names for key in (lane, stamps_key(lane))]
    script = _SCRIPTS.for_client(client)["backlog"]
    reply = script(keys=keys, args=[ENDS, STAMPS_KEEP_S, MAX_STAMPS, STAMPS_AFTER_EMPTY_S])
    return {
        lane: Backlog(int(length), float(text(age)))
        for lane, (length, age) in zip(names, reply, strict=True)
    }


def first_seen(client: Any, lane: str, task_id: str) -> float | None:
    """When the pool first saw message ``task_id`` waiting in ``lane`` (Redis's time), or None."""
    raw = client.hget(stamps_key(lane), task_id)
    if raw is None:
        return None
    try:
        return float(text(raw))
    except ValueError:
        return None


@cache
def broker_client() -> Any:
    """A client on the broker's Redis, where the lanes' lists and stamps live; ``None`` when the
    broker is not Redis (RabbitMQ keeps no list to look at)."""
    # deferred: loads pydantic-settings (~275 ms of start-up) only when this runs
    from aipool.redis.url import connect
    from aipool.settings import settings

    broker = settings().celery_broker_url
    if not broker:
        return connect()
    if broker.startswith(("redis://", "rediss://", "sentinel://")):
        return connect(broker)
    if broker.startswith("redis+socket://"):
        return connect("unix://" + broker[len("redis+socket://") :])
    return None


def oldest_ages(lanes: Iterable[str]) -> dict[str, float]:
    """How long the oldest message of each of ``lanes`` has waited (s), sighting them now; empty
    when the broker is not Redis."""
    client = broker_client()
    if client is None:
        return {}
    return {lane: backlog.oldest_age_s for lane, backlog in sight(client, lanes).items()}
