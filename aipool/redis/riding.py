"""A Redis command sent in the same round trip as the next task message its thread publishes.

``submit()`` claims the task id it minted (:mod:`aipool.attempt.task_ids`) once the message is
out and before it hands the id to anyone. Sent on its own, the claim is a round trip ``submit()``
waits for after the message's (with Redis 0.5 ms away, 0.7 of its 2.8 ms: docs/benchmarks.md,
issue #44). Where the message goes to the same Redis server and database as the
claim, the pool's transport (``workers.edge.transport``) sends the claim in the message's own
pipeline, ahead of it: one round trip for both, the claim still in place before ``submit()``
returns (and before any worker can take the message).

A :class:`Rider` is set for the duration of one publish (:func:`riding`); the transport sends it
with the first task message published meanwhile on a Redis at :attr:`Rider.place`, and records
its reply. A rider nothing sent (another broker, another Redis, kombu's batching or a retrying
client) is the caller's to send on its own; so is one whose reply was an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass
class Rider:
    """One command for the Redis at ``place`` (:func:`aipool.redis.sentinel.pool_place`):
    ``command`` queues it on a redis-py pipeline. ``sent`` and ``reply`` say what became of it."""

    place: tuple[Any, ...]
    command: Callable[[Any], Any]
    sent: bool = False
    #: The command's reply, or the exception Redis answered it with.
    reply: Any = None

    def answered(self, reply: Any) -> None:
        self.sent, self.reply = True, reply


_current: ContextVar[Rider | None] = ContextVar("aipool_rider", default=None)


def current() -> Rider | None:
    """The rider waiting for this context's next task message, if one is and it is not sent."""
    rider = _current.get()
    return None if rider is None or rider.sent else rider


@contextmanager
def riding(rider: Rider) -> Iterator[Rider]:
    """Offer ``rider`` to the task messages published inside the block."""
    token = _current.set(rider)
    try:
        yield rider
    finally:
        _current.reset(token)
