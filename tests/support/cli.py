"""Running ``aipool`` as a newcomer would: a fresh directory, no Redis or database variables,
and a way to find every process a run left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Set in the environment of a command under test; every process it starts inherits it.
MARK = "AIPOOL_TEST_RUN_MARK"
#: Variables a newcomer's shell does not have.
POOL_VARIABLES = ("REDIS_URL", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


def fresh_env(runtime_dir: Path, **extra: str) -> dict[str, str]:
    """The test's environment without the pool's variables, announcing embedded Redis servers in
    ``runtime_dir`` only (so no other run's demo is found), with a unique mark."""
    env = {k: v for k, v in os.environ.items() if k not in POOL_VARIABLES}
    env["AIPOOL_RUNTIME_DIR"] = str(runtime_dir)
    env[MARK] = uuid.uuid4().hex
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_aipool(
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    timeout: float = 60,
    input: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """``aipool ARGS`` in ``cwd``, fed ``input`` on standard input (none: the test's own); output
    captured as text."""
    done = subprocess.run(
        [sys.executable, "-c", "from aipool.cli import main; main()", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        input=input,
        timeout=timeout,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def processes_marked(mark: str) -> list[int]:
    """Live processes whose environment carries ``MARK=mark`` (zombies excluded)."""
    needle = f"{MARK}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found
