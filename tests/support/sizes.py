"""How much a long test does: its size in ``make test``, and its size under ``make soak``.

CI must finish in 15 minutes on two cores, so the longest reliability tests run a smaller number
of the same thing there (fewer kills, a shorter outage, fewer random interleavings): each still
shows its behaviour at least twice. ``make soak`` (``AIPOOL_TEST_SOAK=1``) runs them at the sizes
that give confidence before a release.
"""

from __future__ import annotations

import os

#: Set by ``make soak``.
SOAK = os.environ.get("AIPOOL_TEST_SOAK", "") == "1"


def sized(ci: int, soak: int, env: str | None = None) -> int:
    """``ci`` in ``make test``, ``soak`` under ``make soak``; ``env``, when set, overrides both."""
    if env and os.environ.get(env):
        return int(os.environ[env])
    return soak if SOAK else ci


def sized_s(ci: float, soak: float, env: str | None = None) -> float:
    """As :func:`sized`, for a duration in seconds."""
    if env and os.environ.get(env):
        return float(os.environ[env])
    return soak if SOAK else ci
