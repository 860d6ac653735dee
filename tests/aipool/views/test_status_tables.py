"""The status table an operator reads: a provider paused by its own rate limit says so."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from aipool.views.status_tables import render_status

NOW = 1_795_000_000.0


def _report(paused_until: float | None) -> dict[str, Any]:
    breaker = {"state": "closed", "consecutive_failures": 0, "paused_until": paused_until}
    return {"gemini": {"breaker": breaker, "quota": {}}}


def _shown(report: dict[str, Any], lang: str) -> str:
    console = Console(record=True, width=200)
    render_status(report, console, lang=lang, now=NOW)
    return console.export_text()


def test_a_paused_provider_shows_its_pause_beside_its_closed_breaker() -> None:
    report = _report(NOW + 18)
    assert "closed, rate-limit pause 18 s" in _shown(report, "en")
    assert "closed, 限流暫停 18 s" in _shown(report, "zh-TW")


def test_a_pause_that_ended_is_not_shown() -> None:
    assert "pause" not in _shown(_report(NOW - 1), "en")
    assert "pause" not in _shown(_report(None), "en")


def test_a_period_without_a_hop_shows_no_latency_rather_than_zero_ms() -> None:
    from aipool.views.status_tables import summary_table

    console = Console(record=True, width=200)
    console.print(summary_table([], lang="en", title="2027-03-01"))
    (row,) = [line for line in console.export_text().splitlines() if line.startswith("│ none")]
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    # p50 and p95 are unknown, not 0 ms (as a provider's row without calls says them)
    assert cells[-2:] == ["-", "-"] and cells[1] == "0"
