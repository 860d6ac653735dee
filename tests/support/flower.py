"""Flower as the pool runs it (``celery -A workers.app flower``), started for real by a test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.conftest import worker_env
from tests.support.pool import ROOT

_LOGIN_AND_ADDRESS = (
    "FLOWER_BASIC_AUTH",
    "FLOWER_AUTH",
    "FLOWER_ADDRESS",
    "AIPOOL_ALLOW_ANONYMOUS",
)


def flower_env(**extra: str) -> dict[str, str]:
    """The test's environment with ``extra``, and no login or address unless ``extra`` sets one."""
    env = worker_env(**extra)
    for name in _LOGIN_AND_ADDRESS:
        if name not in extra:
            env.pop(name, None)
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # Flower is one process (as deployed)
    return env


@contextmanager
def flower_process(log: Path, *args: str, **env: str) -> Iterator[subprocess.Popen[bytes]]:
    """``celery -A workers.app flower *args`` with :func:`flower_env`, writing ``log``; stopped
    (its whole process group) when the block ends."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "workers.app", "flower", *args],
            cwd=ROOT,
            env=flower_env(**env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def serving(process: subprocess.Popen[bytes], log: Path, port: int) -> bool:
    """Whether the Flower ``process`` answers its health check on ``port``; raises if it exited."""
    if process.poll() is not None:
        raise RuntimeError(f"flower exited: {log.read_text(errors='replace')}")
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthcheck", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
