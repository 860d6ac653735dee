"""The operator's tables in a narrow terminal (80 columns, the default of most) and in the daily
report's 110-column notification: every provider, service and figure in full, never cut short."""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import pytest
from rich.console import Console

from aipool.ledger.summary import ProviderSummary
from aipool.views.status_tables import render_status, summary_table
from aipool.views.usage_words import summary_cells, summary_headers

#: A day of an outage: every failure reason and skip the view has words for, several at once.
SUMMARIES = [
    ProviderSummary("claude", calls=4, ok=4, answered=4, input_tokens=120, output_tokens=68,
                    cost_usd=Decimal("0.001504"), p50_ms=5.0, p95_ms=21.0),
    ProviderSummary("gemini", calls=10, ok=10, answered=10, skipped={"quota_exceeded": 4},
                    input_tokens=300, output_tokens=170, cost_usd=Decimal("0.000470"),
                    p50_ms=5.0, p95_ms=25.0),
    ProviderSummary("ollama", calls=8, ok=1, answered=1,
                    failures={"bad_response": 1, "model_missing": 1, "rate_limited": 1,
                              "rejected": 2, "server_error": 2},
                    skipped={"circuit_open": 7}, input_tokens=13, output_tokens=32,
                    p50_ms=3.0, p95_ms=16.0),
]  # fmt: skip


def _shown(renderable: Any, width: int) -> str:
    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 110])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_a_narrow_console_shows_every_provider_and_figure_in_full(width: int, lang: str) -> None:
    text = _shown(summary_table(SUMMARIES, lang=lang, title="2026-12-08 (Asia/Taipei)"), width)
    assert "…" not in text
    assert all(len(line) <= width for line in text.splitlines())
    flat = " ".join(text.split())
    for summary in SUMMARIES:
        # each cell whole, beside its column's heading (headings may hold spaces: compare words)
        for heading, cell in list(
            zip(summary_headers(lang), summary_cells(summary, lang), strict=True)
        )[1:]:
            assert f"{' '.join(heading.split())} {' '.join(cell.split())}" in flat, (heading, cell)
        assert summary.provider in text.split()


def test_a_wide_console_shows_the_table_itself() -> None:
    text = _shown(summary_table(SUMMARIES, lang="en", title="today"), 250)
    # one row per provider, each figure in its column
    (row,) = [line for line in text.splitlines() if line.startswith("│ ollama")]
    assert "7 (bad response 1, model missing 1, rate limited 1, rejected 2, server error 2)" in row


def test_the_breakers_and_quotas_at_80_columns_show_each_use_whole() -> None:
    quota = {"daily_tokens": {"used": 470, "limit": 100_000}, "rpm": {"used": 9, "limit": 10}}
    report = {
        "gemini": {"breaker": {"state": "closed"}, "quota": quota},
        "ollama": {"breaker": {"state": "open"}, "quota": {}},
    }
    console = Console(record=True, width=80, file=io.StringIO(), color_system=None)
    render_status(report, console)
    text = console.export_text()
    assert "…" not in text
    assert "470 / 100,000" in text and "9 / 10" in text
    assert {"gemini", "ollama", "open", "closed"} <= set(text.split())
