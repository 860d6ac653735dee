"""The benchmark's own arithmetic: percentiles, the JSON line of a figure, the table's verdicts."""

from __future__ import annotations

import io
import json
import math

from rich.console import Console

from bench.figures import Figure, Report, p50, p99, percentile
from bench.profile import _aggregate, _server_summary


def test_percentiles_interpolate_between_samples() -> None:
    # Given 101 evenly spaced samples, Then the median and the 99th percentile are exact
    samples = [float(i) for i in range(101)]
    assert p50(samples) == 50.0
    assert p99(samples) == 99.0
    # And one sample is its own percentile; no sample has none
    assert percentile([7.0], 0.99) == 7.0
    assert math.isnan(percentile([], 0.5))


def test_a_figure_prints_one_json_line_with_its_target_and_verdict() -> None:
    # Given a report writing to a buffer
    out = io.StringIO()
    report = Report(out)
    # When a figure is added
    report.add(
        Figure("overhead", "added at p50", 1.23456, "ms", "≤ 1.5 ms", True, 7.9, "bare", {"n": 3})
    )
    # Then it is printed at once as one JSON line, rounded, with everything a reader needs
    line = out.getvalue()
    assert line.count("\n") == 1
    data = json.loads(line)
    assert data == {
        "group": "overhead",
        "figure": "added at p50",
        "value": 1.235,
        "unit": "ms",
        "baseline": 7.9,
        "baseline_name": "bare",
        "target": "≤ 1.5 ms",
        "met": True,
        "details": {"n": 3},
    }


def test_the_table_says_which_targets_are_met_and_missed() -> None:
    # Given one met, one missed and one informational figure
    report = Report(io.StringIO())
    report.add(Figure("a", "met one", 1.0, "ms", "≤ 2 ms", True))
    report.add(Figure("a", "missed one", 3.0, "ms", "≤ 2 ms", False))
    report.add(Figure("a", "context", float("nan"), "ms"))
    console = Console(file=io.StringIO(), width=160, color_system=None)
    # When the table is printed
    report.table(console)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    # Then each verdict shows, and the count of met and missed targets closes it
    assert "yes" in text and "NO" in text
    assert "1 targets met, 1 missed" in text


def test_profile_samples_become_milliseconds_per_request(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Given py-spy raw samples at 1000 Hz over 2 requests: 40 in the task body, 10 of them in
    # the provider call
    raw = tmp_path / "raw.txt"
    body = 'process 1:"celery";generate (tasks/generate.py:90)'
    raw.write_text(
        f"{body};run (aipool/attempt/runner.py:120) 30\n"
        f"{body};run (aipool/attempt/runner.py:120);complete (aipool/providers/ollama.py:140) 10\n"
    )
    # When aggregated
    summary = _aggregate(raw, requests=2, rate=1000)
    # Then every figure is in milliseconds per request
    assert summary["total_ms_per_request"] == 20.0
    assert summary["inclusive"]["ai.generate task body"] == 20.0
    assert summary["inclusive"]["provider call (adapter)"] == 5.0


def test_server_time_is_per_request_and_keeps_a_scripts_own_commands_out_of_the_total() -> None:
    # Given SLOWLOG entries of two requests: each an attempt script (whose HSET is logged on its
    # own, from the script's client), a kombu LPUSH, and the bench's own bookkeeping
    scripts = {"abc123": "attempt"}
    entries = []
    for _ in range(2):
        entries += [
            {"client_address": b"?:0", "duration": 5, "command": b"HSET aipool:attempt:j state x"},
            {
                "client_address": b"127.0.0.1:5000",
                "duration": 100,
                "command": b"EVALSHA abc123 1 aipool:attempt:j begin 0",
            },
            {"client_address": b"127.0.0.1:5001", "duration": 8, "command": b"LPUSH ollama {}"},
            {"client_address": b"127.0.0.1:9", "duration": 50, "command": b"DEL aipool:breaker"},
        ]
    # When summarised, leaving out the bench's connection
    summary = _server_summary(entries, requests=2, scripts=scripts, own="127.0.0.1:9")
    # Then the script is named by its op, the total counts each microsecond once, per request
    assert summary["us_per_request"] == 108.0
    assert summary["by_command"]["EVALSHA attempt begin"]["calls_per_request"] == 1.0
    assert summary["by_command"]["in scripts: HSET"]["us_per_request"] == 5.0
    assert "DEL" not in summary["by_command"]
