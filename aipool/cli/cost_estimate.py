"""``aipool cost-estimate``: ADR-006 §4's monthly scenarios from the price table."""

from __future__ import annotations

import typer

from aipool.cli.console import console


def cost_estimate() -> None:
    """ADR-006 §4's monthly cost scenarios, computed from the price table; then every price in
    force and the file it came from (the packaged prices, AIPOOL_PRICES_FILE merged over them)."""
    # deferred: `aipool` imports every command at start; only this one loads aipool.prices.table, aipool.views.cost_estimate (~10 ms)
    from aipool.prices.table import load_prices
    from aipool.views.cost_estimate import cost_estimate as estimate
    from aipool.views.cost_estimate import render_cost_estimate, render_prices

    prices = load_prices()
    out = console()
    render_cost_estimate(estimate(prices), out)
    render_prices(prices, out)


def register(app: typer.Typer) -> None:
    app.command("cost-estimate")(cost_estimate)
