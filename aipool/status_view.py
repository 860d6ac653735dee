"""The ai-usage report as a table an operator reads at a glance (``aipool status``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

_STATE_STYLE = {"closed": "green", "half_open": "yellow", "open": "bold red"}
_COLUMNS = ("rpm", "daily_requests", "daily_tokens", "monthly_tokens")


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("limit") is None:
        return "unlimited"
    used = entry.get("used") or 0
    return f"{used:,} / {entry['limit']:,}"


def render_status(report: dict[str, Any], console: Console) -> None:
    """Print breaker state and quota use (used / limit) per provider."""
    table = Table(title="AI usage (shared by the whole pool)")
    table.add_column("provider")
    table.add_column("breaker")
    for name in _COLUMNS:
        table.add_column(name.replace("_", " "), justify="right")
    for provider, entry in report.items():
        state = str(entry["breaker"].get("state", "?"))
        style = _STATE_STYLE.get(state, "")
        quota = entry.get("quota", {})
        table.add_row(
            provider,
            f"[{style}]{state}[/]" if style else state,
            *(_cell(quota.get(name)) for name in _COLUMNS),
        )
    console.print(table)
