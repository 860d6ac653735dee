"""ADR-006 §4's cost estimate priced with the current table, and the prices in force with the file
each came from (``aipool cost-estimate``)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from aipool.cli import run
from aipool.views.cost_estimate import cost_estimate, render_cost_estimate


@pytest.fixture(autouse=True)
def _fresh_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIPOOL_PRICES_FILE", raising=False)


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


def test_given_a_prices_file_when_estimating_then_each_price_says_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given
    path = tmp_path / "site-prices.toml"
    path.write_text('[gemini]\ninput_per_1k = "0.0005"\n', encoding="utf-8")
    monkeypatch.setenv("AIPOOL_PRICES_FILE", str(path))
    monkeypatch.setenv("COLUMNS", "250")
    # When
    code = run(["cost-estimate"])
    # Then: the estimate uses the merged prices, and the prices table names both files
    out = capsys.readouterr().out
    assert code == 0
    gemini_row = next(line for line in out.splitlines() if line.startswith("│ gemini"))
    assert f"{path} (input_per_1k)" in gemini_row and "aipool/prices/prices.toml" in gemini_row
    claude_row = next(line for line in out.splitlines() if line.startswith("│ claude"))
    assert claude_row.rstrip(" │").endswith("aipool/prices/prices.toml")
