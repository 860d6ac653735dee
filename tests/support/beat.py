"""A real ``celery beat`` process, for tests that rely on the schedule running by itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.pool import ROOT


class Beat:
    """``celery -A workers.app beat`` with its schedule file in a directory of its own."""

    def __init__(self, env: dict[str, str]) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="aipool-beat-"))
        self.log_path = self.directory / "beat.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers.app",
                "beat",
                "-s",
                str(self.directory / "schedule"),
                "--pidfile=",
                "-l",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        """The end of beat's log."""
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        """Stop beat and remove its schedule file."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()
        for path in self.directory.iterdir():
            path.unlink()
        self.directory.rmdir()
