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


#: The cost table alone, a few runs (``bench/run --profile`` adds real workers' round trips: the
#: slow part, which ``bench.profile`` has tests of its own).
PROFILE = """
import sys
from bench import costs
from bench.environment import prepare
pool = prepare(quick=True)
try:
    costs.print_table(costs.profile(pool, 3), sys.stdout)
finally:
    pool.simulator.stop()
    pool.redis.flushdb()
"""


def test_the_profile_runs_and_prints_every_step() -> None:
    env = {
        **os.environ,
        "AIPOOL_BENCH_REDIS_URL": redis_db(14),
        "AIPOOL_BENCH_DATABASE": database_named("bench_costs"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROFILE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {line.split("  ")[0].strip() for line in done.stdout.splitlines()}
    assert {name for name, _ in STEPS} <= rows
