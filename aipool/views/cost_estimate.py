"""ADR-006 §4's monthly cost estimate and the prices in force, as ``aipool cost-estimate`` prints
them.

The estimate prices the ADR's token volumes with the current table (:mod:`aipool.prices.table`),
so a changed price file changes the estimate; the prices table names the file each value came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from rich.console import Console

from aipool.prices.table import PriceTable, load_prices
from aipool.views.fitted_table import FittedTable


@dataclass(frozen=True)
class Scenario:
    """One row of ADR-006 §4: monthly token volumes and the cost the ADR wrote down for them."""

    name: str
    description: str
    gemini_tokens: int
    claude_tokens: int
    adr_cost_usd: Decimal


#: ADR-006 §4 "成本預估", token volumes per month as the ADR gives them.
ADR_SCENARIOS = (
    Scenario("normal", "正常 (Ollama 100%)", 0, 0, Decimal("0")),
    Scenario("light", "輕度降級 (Ollama 90%, Gemini 10%)", 200_000, 0, Decimal("0.20")),
    Scenario("medium", "中度降級 (Gemini 80%, Claude 20%)", 1_600_000, 400_000, Decimal("5")),
    Scenario("full", "完全降級 (雲端 100%)", 2_000_000, 500_000, Decimal("10")),
)


@dataclass(frozen=True)
class CostEstimate:
    """A scenario priced with the current table, and whether the ADR's own figure agrees."""

    scenario: Scenario
    gemini_usd: Decimal
    claude_usd: Decimal
    total_usd: Decimal
    note: str


def cost_estimate(
    prices: PriceTable | None = None,
    scenarios: tuple[Scenario, ...] = ADR_SCENARIOS,
    *,
    input_share: float = 0.5,
    tolerance: float = 0.10,
) -> list[CostEstimate]:
    """Price ADR-006 §4's scenarios with the current price table.

    The ADR gives one token volume per provider; ``input_share`` of it is priced as input and the
    rest as output (irrelevant while input and output prices are equal, as in the defaults). The
    note says whether the ADR's rounded figure is within ``tolerance`` of the computed one; where
    it is not (full degradation: 2M Gemini + 500K Claude tokens cost $2 + $4 = $6 at the ADR's
    own prices, while it says ~$10) the computed value is what the table shows.
    """
    table = prices or load_prices()
    result = []
    for s in scenarios:
        parts = []
        for provider, volume in (("gemini", s.gemini_tokens), ("claude", s.claude_tokens)):
            inp = round(volume * input_share)
            parts.append(table.price(provider).cost(inp, volume - inp))
        total = parts[0] + parts[1]
        adr = s.adr_cost_usd
        if adr == total or (total and abs(adr - total) / total <= Decimal(str(tolerance))):
            note = "matches ADR" if adr == total else f"ADR rounds to ~${adr}"
        else:
            note = f"ADR says ~${adr}; its own prices give ${total:.2f}"
        result.append(CostEstimate(s, parts[0], parts[1], total, note))
    return result


def _tokens(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:g}M"
    if n >= 1000:
        return f"{n / 1000:g}K"
    return str(n)


def render_cost_estimate(rows: list[CostEstimate], console: Console | None = None) -> None:
    """Print the estimate as a Rich table (the ``aipool cost-estimate`` command)."""
    table = FittedTable(title="Monthly AI cost estimate (ADR-006 §4, current price table)")
    for column, justify in (
        ("Scenario", "left"),
        ("Gemini tokens", "right"),
        ("Claude tokens", "right"),
        ("Gemini $", "right"),
        ("Claude $", "right"),
        ("Total $/month", "right"),
        ("ADR $", "right"),
        ("Note", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(
            r.scenario.description,
            _tokens(r.scenario.gemini_tokens),
            _tokens(r.scenario.claude_tokens),
            f"{r.gemini_usd:.2f}",
            f"{r.claude_usd:.2f}",
            f"{r.total_usd:.2f}",
            f"~{r.scenario.adr_cost_usd}",
            r.note,
        )
    (console or Console()).print(table)


def _per_1k(value: Decimal | None) -> str:
    return "input" if value is None else f"{value.normalize():f}"


def render_prices(prices: PriceTable, console: Console | None = None) -> None:
    """Print every price row in force and the file each of its values came from."""
    table = FittedTable(
        title="Prices in force (USD per 1K tokens), merged in order: " + ", ".join(prices.files)
    )
    for column in (
        "Provider",
        "Model",
        "Input",
        "Output",
        "Cache write",
        "Cache write 1h",
        "Cache read",
        "From",
    ):
        table.add_column(column)
    rows = [(p, None) for p in sorted(prices.providers)] + sorted(prices.models)
    for provider, model in rows:
        price = prices.price(provider, model)
        table.add_row(
            provider,
            model or "(default)",
            _per_1k(price.input_per_1k),
            _per_1k(price.output_per_1k),
            _per_1k(price.cache_write_per_1k),
            _per_1k(
                price.cache_write_1h_per_1k
                if price.cache_write_1h_per_1k is not None
                else price.cache_write_per_1k
            ),
            _per_1k(price.cache_read_per_1k),
            price.origin,
        )
    (console or Console()).print(table)
