"""``aipool cost-estimate``: ADR-006 §4's monthly scenarios from the price table."""

from __future__ import annotations

import typer

from aipool.cli.console import console


def cost_estimate() -> None:
    """ADR-006 §4's monthly cost scenarios, computed from the price table."""
    from aipool.pricing import cost_estimate as estimate
    from aipool.pricing import render_cost_estimate

    render_cost_estimate(estimate(), console())


def register(app: typer.Typer) -> None:
    app.command("cost-estimate")(cost_estimate)
