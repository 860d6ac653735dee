"""The stage meters of ``bench.stages``: what they wrap exists, they add up each call, and the
summary takes medians over the tasks that ran a stage."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import pytest

from bench import stage_meter
from bench.stage_meter import PLAIN_STAGES, POOL_STAGES, TASK, install, timed
from bench.stages import summary, table


@pytest.mark.parametrize("label,target", [*POOL_STAGES, *PLAIN_STAGES])
def test_every_stage_names_a_function_that_exists(label: str, target: str) -> None:
    # A renamed function must fail here, not leave a stage silently unmeasured.
    module_name, _, path = target.partition(":")
    owner: object = importlib.import_module(module_name)
    for name in path.split("."):
        owner = getattr(owner, name)
    assert callable(owner), label


def test_a_timed_function_answers_as_before_and_adds_its_time_to_its_stage() -> None:
    stage_meter.started()
    double = timed("double", lambda x: 2 * x)
    assert double(2) == 4 and double(3) == 6
    wall, cpu = stage_meter._spent["double"]
    assert wall > 0 and cpu >= 0
    stage_meter.started()  # a new task starts from nothing
    assert "double" not in stage_meter._spent


def test_install_wraps_a_module_function_and_a_classmethod_where_they_are_looked_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("stage_target")

    class Thing:
        @classmethod
        def make(cls, value: int) -> tuple[type, int]:
            return cls, value

    module.helper = lambda value: value + 1  # type: ignore[attr-defined]
    module.Thing = Thing  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "stage_target", module)
    install((("helper", "stage_target:helper"), ("make", "stage_target:Thing.make")))
    stage_meter.started()
    assert module.helper(1) == 2
    assert Thing.make(5) == (Thing, 5)
    assert set(stage_meter._spent) == {"helper", "make"}


def test_the_summary_is_each_stages_median_over_the_tasks_that_ran_it() -> None:
    rows = [
        {TASK: [0.010, 0.008], "call (SDK)": [0.002, 0.001]},
        {TASK: [0.012, 0.009], "call (SDK)": [0.004, 0.003]},
        {TASK: [0.020, 0.010]},
    ]
    got = summary(rows)
    assert got[TASK] == {"wall_us": pytest.approx(12000), "cpu_us": pytest.approx(9000), "tasks": 3}
    assert got["call (SDK)"] == {
        "wall_us": pytest.approx(3000),
        "cpu_us": pytest.approx(2000),
        "tasks": 2,
    }
    lines = table(got, {TASK: {"wall_us": 5000.0, "cpu_us": 4000.0, "tasks": 3}})
    assert lines[-1].split()[-4:] == ["12000", "9000", "5000", "4000"]
    assert any(line.startswith("call (SDK)") and line.rstrip().endswith("-") for line in lines)


@pytest.mark.parametrize("text", ["abc", "0", "-3"])
def test_a_count_that_measures_nothing_is_refused_in_one_line(text: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.stages", "--n", text],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("stages.py: error: argument --n:")


def test_fresh_requests_differ_and_start_where_the_repeated_one_does() -> None:
    # --fresh measures the decision a worker makes for a prompt it has not seen: each request
    # must be new, and still a simple question for the local model, so the hops compare.
    from aipool.contract.request import parse_request
    from aipool.routing.router import decide
    from bench.latency import SIMPLE, fresh_request

    requests = [fresh_request(i) for i in range(50)]
    assert len({request["prompt"] for request in requests}) == 50
    repeated = decide(parse_request(SIMPLE))
    for request in requests:
        route = decide(parse_request(request))
        assert route.chain == repeated.chain


def test_a_process_cpu_reading_grows_with_the_work_the_process_does() -> None:
    import os
    import time

    from bench.stages import process_cpu_s

    before = process_cpu_s(os.getpid())
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    assert process_cpu_s(os.getpid()) - before == pytest.approx(0.2, abs=0.06)


def test_the_process_table_shows_each_process_per_request_and_the_total_ratio() -> None:
    from bench.stages import PROCESSES, per_request, process_table

    pool = per_request(dict(zip(PROCESSES, (0.6, 1.4, 2.8), strict=True)), 1000)
    plain = per_request(dict(zip(PROCESSES, (0.3, 1.4, 1.8), strict=True)), 1000)
    assert pool[PROCESSES[2]] == pytest.approx(2800)
    lines = process_table(pool, plain)
    assert lines[1].split()[-3:] == ["600", "300", "2.00x"]
    assert lines[-1].split() == ["total", "4800", "3500", "1.37x"]
