"""``aipool status --serve`` as a real process, on a free port of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.cli import fresh_env
from tests.support.services import free_port


def serve_status(tmp_path: Path, *options: str, **env: str) -> tuple[subprocess.Popen[str], int]:
    """Start ``aipool status --serve`` (with ``options``) against the test Redis (unless ``env``
    names another), with no login variable but those in ``env``; its stdout and stderr are pipes.
    Returns the process and its port; the caller stops it."""
    from tests.conftest import TEST_REDIS_URL

    port = free_port()
    command = [sys.executable, "-c", "from aipool.cli import main; main()"]
    environment = fresh_env(tmp_path / "runtime", **{"REDIS_URL": TEST_REDIS_URL, **env})
    for name in ("AIPOOL_HEALTH_TOKEN", "AIPOOL_ALLOW_ANONYMOUS"):
        if name not in env:
            environment.pop(name, None)
    process = subprocess.Popen(
        [*command, "status", "--serve", "--port", str(port), *options],
        env=environment,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, port
