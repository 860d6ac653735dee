"""Breaker transitions as the worker logged them (``aipool.breaker``'s log listener).

Every transition is reported once for the whole pool, by the process that caused it, and logged
there; the demo owns its worker's log, so it reads them back with their times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

# Celery's default worker log format: "[2026-11-30 04:58:27,804: WARNING/ForkPoolWorker-1] ...".
_LINE = re.compile(
    r"^\[(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): \w+/[^\]]+\] "
    r"breaker (?P<provider>\w+): (?P<old>\w+) -> (?P<new>\w+) \((?P<reason>.*)\)\s*$"
)


@dataclass(frozen=True)
class Transition:
    at: float
    provider: str
    old: str
    new: str
    reason: str


def read_transitions(log_path: Path) -> list[Transition]:
    """Every breaker transition in the worker's log, oldest first."""
    if not log_path.exists():
        return []
    found = []
    for line in log_path.read_text(errors="replace").splitlines():
        match = _LINE.match(line)
        if match:
            at = datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            found.append(
                Transition(at, match["provider"], match["old"], match["new"], match["reason"])
            )
    return found
