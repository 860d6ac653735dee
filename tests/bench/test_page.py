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
