"""Polling for a condition with a deadline, instead of sleeping a guessed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Call ``check`` until it returns something truthy and return that; raise after ``timeout``.

    ``what`` names the awaited condition in the ``TimeoutError`` message.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not true after {timeout:g} s")
        time.sleep(interval)
