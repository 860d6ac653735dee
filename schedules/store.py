"""Where beat keeps its schedule (when each entry last ran) when no ``--schedule`` is given.

Celery's default is ``celerybeat-schedule`` in the current directory: run from a checkout, it
left ``celerybeat-schedule.*`` files in the repository's root. The pool's default is
``var/celerybeat-schedule``, beside the SQLite ledger (``var/`` is the local state directory,
ignored by git); compose and Kubernetes give ``--schedule`` on a volume of beat's own.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler
from celery.signals import before_task_publish

from schedules.beat import ROUTINE_STALE_AFTER_S

log = logging.getLogger(__name__)

#: The schedule file when beat is given none.
DEFAULT_SCHEDULE_FILE = str(Path("var") / "celerybeat-schedule")


class PoolScheduler(PersistentScheduler):
    """Celery's file-backed scheduler, which first makes the directory its file goes in (shelve
    does not, and ``var/`` does not exist in a fresh checkout), and stamps each routine it sends
    with Redis's time (:mod:`aipool.routines`)."""

    def setup_schedule(self) -> None:
        before_task_publish.connect(_stamp_routine, weak=False, dispatch_uid="aipool-routine")
        super().setup_schedule()

    def _open_schedule(self) -> Any:
        Path(self.schedule_filename).parent.mkdir(parents=True, exist_ok=True)  # type: ignore[attr-defined]  # private, not in celery-types' stub
        return super()._open_schedule()  # type: ignore[misc]  # private, not in celery-types' stub


_stamping_client: Any = None


def _stamp_routine(
    sender: str | None = None, headers: dict[str, Any] | None = None, **_: Any
) -> None:
    # Beat's own sends only (Celery marks them celery_beat_task), of the pool's routines.
    if headers is None or not headers.get("celery_beat_task"):
        return
    if sender not in ROUTINE_STALE_AFTER_S:
        return
    # deferred: celeryconfig imports this module, and the workers need no Redis client from it
    from aipool.redis.url import client_for, redis_url
    from aipool.routines import HEADER, stamp

    global _stamping_client
    if _stamping_client is None:
        _stamping_client = client_for(redis_url())
    # A stamp Redis cannot give leaves the run unstamped: it then runs whenever it arrives.
    try:
        headers[HEADER] = stamp(_stamping_client, ROUTINE_STALE_AFTER_S[sender])
    except Exception as exc:  # the send must go on; the run is only unguarded
        log.warning("routine %s sent unstamped: %s", sender, type(exc).__name__)
