"""What a call costs: a price table per provider and model, and ADR-006's monthly cost estimate.

Prices are data (``aipool/prices.toml``, replaced by the file named in ``AIPOOL_PRICES_FILE``),
in USD per 1,000 input and per 1,000 output tokens. A model without its own row costs its
provider's default; an unknown provider costs nothing (local or terminal hops). Money is
``Decimal`` throughout, so sums in the ledger do not drift.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

_DEFAULT_FILE = Path(__file__).with_name("prices.toml")
_THOUSAND = Decimal(1000)
#: Costs are stored with six decimals (a millionth of a dollar).
MICRO = Decimal("0.000001")


@dataclass(frozen=True)
class Price:
    """USD per 1,000 input tokens and per 1,000 output tokens."""

    input_per_1k: Decimal
    output_per_1k: Decimal

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        """Cost of one call, rounded to a millionth of a dollar."""
        raw = (self.input_per_1k * input_tokens + self.output_per_1k * output_tokens) / _THOUSAND
        return raw.quantize(MICRO)


FREE = Price(Decimal(0), Decimal(0))


@dataclass(frozen=True)
class PriceTable:
    """Provider defaults plus per-model overrides."""

    providers: dict[str, Price]
    models: dict[tuple[str, str], Price]

    def price(self, provider: str, model: str | None = None) -> Price:
        """The model's own price, else its provider's, else free."""
        if model is not None and (provider, model) in self.models:
            return self.models[(provider, model)]
        return self.providers.get(provider, FREE)


def _price(data: dict[str, Any]) -> Price:
    return Price(
        Decimal(str(data.get("input_per_1k", 0))), Decimal(str(data.get("output_per_1k", 0)))
    )


def parse_prices(data: dict[str, Any]) -> PriceTable:
    """Build a table from parsed TOML (see ``prices.toml`` for the layout)."""
    providers, models = {}, {}
    for provider, section in data.items():
        providers[provider] = _price(section)
        for model, row in section.get("models", {}).items():
            models[(provider, model)] = _price(row)
    return PriceTable(providers, models)


def load_prices(path: str | None = None) -> PriceTable:
    """The price table from ``path``, else ``AIPOOL_PRICES_FILE``, else the packaged defaults."""
    if path is None:
        from aipool.settings import settings

        path = str(settings().prices_file or _DEFAULT_FILE)
    return _read_prices(path)


@cache
def _read_prices(path: str) -> PriceTable:
    # Read once per file and process: every priced hop asks.
    with Path(path).open("rb") as fh:
        # Decimal keeps "0.001" exact when a file writes prices as TOML floats.
        return parse_prices(tomllib.load(fh, parse_float=Decimal))


def cost_usd(
    provider: str,
    model: str | None,
    input_tokens: int,
    output_tokens: int,
    prices: PriceTable | None = None,
) -> Decimal:
    """USD cost of one call, rounded to a millionth of a dollar."""
    return (prices or load_prices()).price(provider, model).cost(input_tokens, output_tokens)


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
    table = Table(title="Monthly AI cost estimate (ADR-006 §4, current price table)")
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
