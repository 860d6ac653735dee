"""The per-process pieces a worker builds once: the hop runner with its guards and observers."""

from __future__ import annotations

from functools import cache

from aipool.hop import HopRunner


@cache
def hop_runner() -> HopRunner:
    """The process-wide :class:`HopRunner` (SDK clients and Redis scripts are built once)."""
    return HopRunner()
