"""Where beat keeps its schedule (when each entry last ran) when no ``--schedule`` is given.

Celery's default is ``celerybeat-schedule`` in the current directory: run from a checkout, it
left ``celerybeat-schedule.*`` files in the repository's root. The pool's default is
``var/celerybeat-schedule``, beside the SQLite ledger (``var/`` is the local state directory,
ignored by git); compose and Kubernetes give ``--schedule`` on a volume of beat's own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler

#: The schedule file when beat is given none.
DEFAULT_SCHEDULE_FILE = str(Path("var") / "celerybeat-schedule")


class PoolScheduler(PersistentScheduler):
    """Celery's file-backed scheduler, which first makes the directory its file goes in (shelve
    does not, and ``var/`` does not exist in a fresh checkout)."""

    def _open_schedule(self) -> Any:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)  # type: ignore[attr-defined]  # private, not in celery-types' stub
        return super()._open_schedule()  # type: ignore[misc]  # private, not in celery-types' stub
