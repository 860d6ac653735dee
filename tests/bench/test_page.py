"""``bench/run --write``: the run kept as JSON, the page's generated tables replaced, its prose kept."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bench.figures import Figure, Report
from bench.page import END, START, write


def _report() -> Report:
    report = Report(io.StringIO())
    details = {
        "pool_p50_ms": 10.0,
        "pool_p95_ms": 12.0,
        "pool_p99_ms": 15.0,
        "plain_p50_ms": 9.0,
        "plain_p95_ms": 11.0,
        "plain_p99_ms": 13.0,
        "added_p50_ci95_ms": [0.6, 1.4],
        "same_app_p50_ms": 9.5,
    }
    name = "by name vs plain Celery 2 hops, task events on, -c 1"
    report.add(
        Figure("plain", f"{name}: added at p50", 1.0, "ms", "≤ 1.5 ms", True, 9.0, "plain", details)
    )
    report.add(
        Figure(
            "plain", f"{name}: added at p99", 2.0, "ms", "≤ 5.0 ms", True, 13.0, "plain", details
        )
    )
    return report


def test_a_written_run_replaces_the_tables_and_keeps_the_prose(tmp_path: Path) -> None:
    # Given a page with prose around an old generated section
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# Benchmarks\n\nMethod.\n\n{START}\nold table\n{END}\n\nWhy.\n")
    kept = tmp_path / "benchmarks.json"
    # When a run is written
    write(_report(), {"date": "2026-12-02", "machine": {"commit": "abc"}}, kept, page)
    # Then the JSON holds the run and every figure
    data = json.loads(kept.read_text())
    assert data["machine"]["commit"] == "abc"
    assert [f["value"] for f in data["figures"]] == [1.0, 2.0]
    # and the page has the new table in place of the old one, its prose untouched
    text = page.read_text()
    assert "old table" not in text
    assert text.startswith("# Benchmarks\n\nMethod.\n\n") and text.endswith("\n\nWhy.\n")
    assert "| by name vs plain Celery 2 hops, task events on, -c 1 | 10.00 / 12.00 / 15.00 " in text
    assert "**1.00** [0.60, 1.40]" in text


def test_a_page_without_its_markers_is_not_written(tmp_path: Path) -> None:
    # Given a page whose generated section was deleted
    page = tmp_path / "benchmarks.md"
    page.write_text("# Benchmarks\n")
    # Then writing a run says so rather than losing the figures' place
    with pytest.raises(SystemExit, match="no generated section"):
        write(_report(), {}, tmp_path / "b.json", page)


def _figure(group: str, name: str, value: float) -> Figure:
    return Figure(group, name, value, "ms")


def test_a_run_of_some_groups_keeps_the_others_each_figure_with_its_commit(
    tmp_path: Path,
) -> None:
    # Given a page and the JSON of a full run at commit aaa, written before figures had commits
    page = tmp_path / "benchmarks.md"
    page.write_text(f"{START}\n{END}\n")
    kept = tmp_path / "benchmarks.json"
    old = {
        "date": "2026-12-01 10:00 UTC",
        "machine": {"commit": "aaa"},
        "figures": [
            _figure("cpu", "import time", 1.0).to_dict(),
            _figure("network", "old network", 2.0).to_dict(),
            _figure("memory", "rss", 3.0).to_dict(),
        ],
    }
    kept.write_text(json.dumps(old))
    # When a run of the network and scaleout groups at commit bbb is written
    report = Report(io.StringIO())
    report.add(_figure("scaleout", "four workers", 5.0))
    report.add(_figure("network", "new network", 4.0))
    run = {"date": "2026-12-06 23:00 UTC", "groups": ["network", "scaleout"]}
    write(report, {**run, "machine": {"commit": "bbb"}}, kept, page)
    # Then the network figure is replaced, the others kept, in bench/run's order of groups
    figures = json.loads(kept.read_text())["figures"]
    assert [(f["figure"], f["commit"]) for f in figures] == [
        ("import time", "aaa"),
        ("new network", "bbb"),
        ("four workers", "bbb"),
        ("rss", "aaa"),
    ]
    assert figures[0]["date"] == "2026-12-01 10:00 UTC"
    # And the page says which commit each figure belongs to, and which groups are older
    text = page.read_text()
    assert "| network | new network | 4 ms |  |  |  | `bbb` |" in text
    assert "| cpu | import time | 1 ms |  |  |  | `aaa` |" in text
    assert "cpu, memory from commit `aaa` (2026-12-01 10:00 UTC)" in text


def test_a_full_run_replaces_every_figure(tmp_path: Path) -> None:
    # Given a kept run with a figure of a group the new run also measures
    page = tmp_path / "benchmarks.md"
    page.write_text(f"{START}\n{END}\n")
    kept = tmp_path / "benchmarks.json"
    write(_report(), {"groups": ["plain"], "machine": {"commit": "aaa"}}, kept, page)
    # When the next run measures that group again
    write(_report(), {"groups": ["plain"], "machine": {"commit": "bbb"}}, kept, page)
    # Then only the new run's figures are kept, and the page names no earlier run
    assert {f["commit"] for f in json.loads(kept.read_text())["figures"]} == {"bbb"}
    assert "earlier runs" not in page.read_text()
