"""Prices as data, per-call cost, and ADR-006 §4's cost estimate."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from aipool.pricing import (
    cost_estimate,
    cost_usd,
    render_cost_estimate,
)


@pytest.fixture(autouse=True)
def _fresh_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIPOOL_PRICES_FILE", raising=False)


def test_given_adr_defaults_when_pricing_calls_then_gemini_claude_paid_local_free() -> None:
    assert cost_usd("gemini", "gemini-2.5-flash", 1000, 1000) == Decimal("0.002000")
    assert cost_usd("claude", "claude-sonnet-5", 500, 500) == Decimal("0.008000")
    assert cost_usd("ollama", "llama3.2:3b", 10_000, 10_000) == 0
    assert cost_usd("nemotron", None, 10_000, 10_000) == 0
    assert cost_usd("static", "static", 5, 5) == 0


def test_given_a_prices_file_when_loaded_then_model_rows_override_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given
    path = tmp_path / "prices.toml"
    path.write_text(
        "[claude]\ninput_per_1k = 0.003\noutput_per_1k = 0.015\n"
        '[claude.models."claude-haiku-4-5"]\ninput_per_1k = 0.001\noutput_per_1k = 0.005\n'
    )
    monkeypatch.setenv("AIPOOL_PRICES_FILE", str(path))
    # When / Then
    assert cost_usd("claude", "claude-sonnet-5", 1000, 1000) == Decimal("0.018000")
    assert cost_usd("claude", "claude-haiku-4-5", 1000, 1000) == Decimal("0.006000")
    assert cost_usd("gemini", "any", 1000, 1000) == 0


def test_given_adr_prices_when_estimating_then_computed_values_and_honest_notes() -> None:
    # When
    rows = {r.scenario.name: r for r in cost_estimate()}
    # Then
    assert [rows[n].total_usd for n in ("normal", "light", "medium", "full")] == [
        Decimal(0),
        Decimal("0.20"),
        Decimal("4.80"),
        Decimal("6.00"),
    ]
    assert rows["light"].note == "matches ADR"
    assert "~$5" in rows["medium"].note
    assert "ADR says ~$10" in rows["full"].note and "$6.00" in rows["full"].note


def test_given_an_estimate_when_rendered_then_the_table_shows_the_note() -> None:
    console = Console(record=True, width=200)
    render_cost_estimate(cost_estimate(), console)
    text = console.export_text()
    assert "6.00" in text and "ADR says ~$10" in text
