"""Issue #44's "Done when" lines: each target passes only when every figure measuring it met it."""

from __future__ import annotations

from typing import Any

from bench.done_when import TARGETS, verdicts


def _figure(group: str, name: str, value: float, met: bool, unit: str = "ms", **details: Any):
    return {"group": group, "figure": name, "value": value, "unit": unit, "met": met,
            "details": details}  # fmt: skip


def test_a_target_passes_when_all_its_figures_met_it_and_fails_when_one_missed() -> None:
    # Given submit()'s p50 with events on met at -c 1 and missed at -c 4, and its throughput met
    figures = [
        _figure("plain", "submit() → ollama vs plain Celery 1 hop + SDK call, task events on, "
                "-c 1: added at p50", 1.2, True),
        _figure("plain", "submit() → ollama vs plain Celery 1 hop + SDK call, task events on, "
                "-c 4: added at p50", 1.7, False),
        _figure("plain", "throughput, submit() vs plain Celery 1 hop, task events on, -c 1",
                95.0, True, "req/s", ratio=0.95),
        _figure("network", "submit() vs plain Celery 1 hop, 0.5 ms added to every Redis "
                "command: added at p50", 0.9, True, round_trips_added=1.8),
    ]  # fmt: skip
    lines = verdicts(figures)
    # Then there is one line per target, in the order
    assert len(lines) == len(TARGETS)
    # and the p50 target with events on fails, naming both values and marking the miss
    assert lines[0].startswith("FAIL  submit() adds ≤ 1.5 ms at p50") and "1.70 ms ✗" in lines[0]
    assert "1.20 ms," in lines[0]
    # and the throughput passes, shown as its ratio; the round trips in round trips
    assert lines[4].startswith("PASS  throughput of submit()") and lines[4].endswith("0.95x")
    assert lines[5].startswith("PASS") and "1.8 round trips (0.90 ms)" in lines[5]
    # and a target none of whose figures were measured says so rather than passing
    assert lines[1].startswith("not measured  submit() adds ≤ 2.0 ms")


def test_a_figure_of_another_group_or_without_a_target_is_not_counted() -> None:
    # Given the same-app overhead figure (not plain Celery's) and a network figure without target
    figures = [
        _figure("overhead", "submit() → ollama: added at p50", 9.0, False),
        {**_figure("network", "submit() vs plain Celery 1 hop: commands", 3.0, True), "met": None},
    ]
    # Then no target is judged by them
    assert all(line.startswith("not measured") for line in verdicts(figures))


def test_on_the_page_a_line_names_the_commits_its_figures_were_measured_at() -> None:
    # Given by name's figures from two runs, as the page keeps them
    name = "by name → router → ollama vs plain Celery 2 hops + SDK call, {}: added at p50"
    figures = [
        {**_figure("plain", name.format("-c 1"), -1.0, True), "commit": "bbb"},
        {**_figure("plain", name.format("-c 4"), -0.5, True), "commit": "aaa"},
    ]
    # Then its line says both commits
    assert verdicts(figures)[3].endswith("-1.00 ms, -0.50 ms (commit aaa, bbb)")
