"""``aipool route``: why a text goes where it goes."""

from __future__ import annotations

from typing import Annotated

import typer

from aipool.cli.console import console


def route(text: Annotated[str, typer.Argument(help="A request text to route.")]) -> None:
    """Show the routing decision (intent, complexity, chain, reasons) for a text."""
    if not text.strip():
        raise typer.BadParameter("the text is empty", param_hint="TEXT")
    from aipool.routing.render import render_route
    from aipool.routing.router import explain

    render_route(explain(text), console())


def register(app: typer.Typer) -> None:
    app.command()(route)
