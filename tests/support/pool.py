"""Real ``celery worker`` processes for integration tests (never eager mode)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALL_QUEUES = ("router", "ollama", "nemotron", "gemini", "claude", "maintenance")


class Worker:
    """One ``celery -A workers.app worker`` process consuming ``queues``."""

    def __init__(
        self, env: dict[str, str], queues: tuple[str, ...] = ALL_QUEUES, concurrency: int = 2
    ) -> None:
        self.name = f"test-{uuid.uuid4().hex[:8]}@localhost"
        self.queues = queues
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"aipool-{self.name}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers.app",
                "worker",
                "-Q",
                ",".join(queues),
                "-c",
                str(concurrency),
                "-n",
                self.name,
                "-l",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, app, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log()}")
            if app.control.ping(destination=[self.name], timeout=0.5):
                return
        raise TimeoutError(f"worker {self.name} not ready: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
