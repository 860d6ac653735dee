"""Worker life-cycle hooks: the ledger schema is brought up to date when a worker starts."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready

log = logging.getLogger("aipool.workers")


@worker_ready.connect
def _migrate_ledger(**_: Any) -> None:
    # Every worker may try: migrations run under an advisory lock and are a no-op when current.
    # A database that is down must not keep a worker from serving: usage waits in Redis.
    from aipool.ledger.db import migrate

    try:
        migrate()
    except Exception:
        log.exception("ledger migration failed; usage records wait in Redis until it succeeds")
