"""A benchmark stopped by SIGTERM (a supervisor, a CI timeout, ``kill``) stops the workers it
started, as Ctrl-C does: they run in sessions of their own and outlived it."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid

import pytest

from tests.support.cli import MARK, processes_marked
from tests.support.pool import ROOT
from tests.support.shared_servers import database_named, redis_db
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def test_a_benchmark_stopped_by_sigterm_leaves_no_worker_running() -> None:
    import os

    # Given bench.stages running with its two workers (a pool's and plain Celery's), marked
    mark = uuid.uuid4().hex
    env = {
        **os.environ,
        MARK: mark,
        "AIPOOL_BENCH_REDIS_URL": redis_db(15),
        "AIPOOL_BENCH_DATABASE": database_named("bench_sigterm"),
    }
    bench = subprocess.Popen(
        [sys.executable, "-m", "bench.stages", "--n", "100000"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def workers() -> list[int]:
            return [pid for pid in processes_marked(mark) if pid != bench.pid]

        # (each worker is a parent and a pool process)
        eventually(lambda: len(workers()) >= 4, 60, "the bench's workers up")
        # When it is told to stop
        bench.send_signal(signal.SIGTERM)
        _, err = bench.communicate(timeout=60)
        # Then it stopped its workers on the way out, and says nothing of it
        eventually(lambda: workers() == [], 30, "the bench's workers stopped")
        assert bench.returncode == 128 + signal.SIGTERM
        assert "Traceback" not in err
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.communicate()
        for pid in processes_marked(mark):
            os.kill(pid, signal.SIGKILL)
