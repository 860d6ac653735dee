"""Counting the round trips a piece of code makes to Redis."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from redis.connection import AbstractConnection


class RoundTrips:
    """Packets sent on redis-py connections since counting began: one per command, and one per
    pipeline or transaction (sent in one write)."""

    def __init__(self) -> None:
        self.sent = 0


@contextlib.contextmanager
def counting_round_trips() -> Iterator[RoundTrips]:
    """Count every packet redis-py sends in this process while the block runs."""
    counter = RoundTrips()
    real = AbstractConnection.send_packed_command

    def counted(self: Any, command: Any, check_health: bool = True) -> None:
        counter.sent += 1
        real(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        AbstractConnection.send_packed_command = real  # type: ignore[method-assign]
