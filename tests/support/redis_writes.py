"""What a process writes to Redis, counted by writes to the socket: one command, or a whole
pipeline, is one write and one round trip. Used in the test process and, imported by a script,
in a producer process of its own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from redis.connection import AbstractConnection

#: The key prefix of a task id's claim (aipool.attempt.task_ids.claim_key).
CLAIM = b"aipool:task-id:"


@contextmanager
def counted_writes() -> Iterator[list[bytes]]:
    """Every write of commands to a Redis socket made inside the block, each as its bytes."""
    sent: list[bytes] = []
    write = AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(command if isinstance(command, bytes) else b"".join(command))
        return write(self, command, *args, **kwargs)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        AbstractConnection.send_packed_command = write  # type: ignore[method-assign]


def claims(sent: list[bytes]) -> list[bool]:
    """For each write that claims a task id, whether the message (its ``LPUSH``) went with it."""
    return [b"LPUSH" in written for written in sent if CLAIM in written]
