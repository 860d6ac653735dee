"""The harnesses' workers leave nothing behind in the temporary directory."""

from __future__ import annotations

from aipool.harness.worker import Worker
from tests.conftest import worker_env


def test_a_stopped_worker_leaves_no_log_file() -> None:
    # Given a worker that exits at once (a misspelt setting), whose log a test has read
    worker = Worker(worker_env(AIPOOL_GEMINI_RPN="5"), queues=("gemini",), concurrency=1)
    worker.process.wait(timeout=60)
    assert "AIPOOL_GEMINI_RPN" in worker.log()
    # When it is stopped
    worker.stop()
    # Then its log file is gone (runs used to leave aipool-test-*.log files in /tmp)
    assert not worker.log_path.exists()
    assert worker.log() == ""
