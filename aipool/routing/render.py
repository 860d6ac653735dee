"""Printing a routing decision for people (the ``aipool route`` command)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aipool.routing.router import Route


def render_route(route: Route, console: Console) -> None:
    """Print ``route`` as a small table: the decision, the chain in order, and the reasons."""
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("intent", f"{route.intent}  (confidence {route.confidence:.2f})")
    summary.add_row("complexity", f"{route.complexity} / 5")
    summary.add_row("rule", route.rule or "-")
    chain = Text()
    for i, hop in enumerate(route.chain):
        if i:
            chain.append(" → ", style="dim")
        chain.append(str(hop), style="bold green" if i == 0 else ("dim" if hop.terminal else ""))
    summary.add_row("chain", chain)
    console.print(summary)
    # The reason is one "; "-separated line in the route; one part per line reads better here.
    for part in route.reason.split("; "):
        console.print(Text(f"  • {part}", style="dim"))
