"""``aipool config``: the effective settings, secrets masked, and where each value came from.

Also the check every ``aipool`` command passes first (:func:`refuse_invalid_settings`): settings
with an unknown ``AIPOOL_*`` variable, an unknown limits-file or route-table key, or a value that
does not fit stop the command in one line naming each of them (exit 1).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from aipool.cli.console import console as make_console


def refuse_invalid_settings() -> None:
    """Raise :class:`~aipool.errors.SettingsError` when the settings are not usable."""
    from aipool.settings.startup import check_at_start

    check_at_start()


def config(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Show the effective settings (secrets masked) and where each value came from."""
    from aipool.settings import read_settings
    from aipool.settings.effective import effective_rows
    from aipool.settings.startup import below_adr_notes

    reading = read_settings()
    rows = effective_rows(reading)
    notes = below_adr_notes(reading.checked())
    if as_json:
        body = {"settings": [r.to_dict() for r in rows], "notes": notes}
        print(json.dumps(body, ensure_ascii=False, indent=2))
        return
    table = Table("variable", "value", "source", title="aipool settings")
    for row in rows:
        table.add_row(row.name, row.value, row.source)
    console = make_console()
    console.print(table)
    for note in notes:
        console.print(f"note: {note}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(config)
