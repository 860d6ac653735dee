"""``bench/run --profile``: the cost table of one request runs against the hop as it is today, and
names every step (it broke twice unseen: an observer added to the runner, a function renamed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.costs import STEPS
from tests.support.pool import ROOT
from tests.support.shared_servers import database_named, redis_db

pytestmark = pytest.mark.integration


def test_the_profile_runs_and_prints_every_step() -> None:
    env = {
        **os.environ,
        "AIPOOL_BENCH_REDIS_URL": redis_db(14),
        "AIPOOL_BENCH_DATABASE": database_named("bench_costs"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "bench.main", "--profile", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split("  ")[0].strip() for line in done.stdout.splitlines()}
    assert {name for name, _ in STEPS} <= rows
    # and the round trips of real workers beside it
    assert "pool submit(), task events on" in done.stdout
