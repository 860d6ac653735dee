"""``aipool config``: the effective settings, secrets masked, and where each value came from.

Also the check every ``aipool`` command passes first (:func:`refuse_invalid_settings`): settings
with an unknown ``AIPOOL_*`` variable, an unknown limits-file or route-table key, or a value that
does not fit stop the command in one line naming each of them (exit 1).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from aipool.cli.console import console as make_console
from aipool.ledger.db import DEFAULT_SQLITE_PATH
from aipool.redis.embedded import find_running
from aipool.settings import read_settings, settings
from aipool.settings.effective import effective_rows
from aipool.settings.startup import below_adr_notes, check_at_start
from aipool.views.fitted_table import FittedTable
from aipool.views.pool_location import describe_database


def refuse_invalid_settings() -> None:
    """Raise :class:`~aipool.errors.SettingsError` when the settings are not usable."""

    check_at_start()


def config(
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
) -> None:
    """Show the effective settings (secrets masked) and where each value came from."""

    reading = read_settings()
    rows = in_force(effective_rows(reading))
    notes = below_adr_notes(reading.checked())
    if as_json:
        body = {"settings": [r.to_dict() for r in rows], "notes": notes}
        print(json.dumps(body, ensure_ascii=False, indent=2))
        return
    table = FittedTable("variable", "value", "source", title="aipool settings")
    for row in rows:
        table.add_row(row.name, row.value, row.source)
    console = make_console()
    console.print(table)
    for note in notes:
        console.print(f"note: {note}", highlight=False)


def in_force(rows: list[Any]) -> list[Any]:
    """``rows`` with the Redis and the ledger this machine's aipool processes would use when
    ``REDIS_URL`` or ``DATABASE_URL`` is unset, and why: the embedded Redis that ``aipool redis``
    or ``aipool demo`` announced (and its ledger), else none, and the SQLite file under ``var/``.
    ("(unset)" hid that the ledger in use was ``var/aipool.db``.)"""
    from dataclasses import replace

    current = settings()
    running = None if current.redis_url else find_running()
    shown = []
    for row in rows:
        if row.name == "REDIS_URL" and not current.redis_url:
            if running is not None:
                row = replace(
                    row,
                    value=running.redis_url,
                    source=f"REDIS_URL unset: the {running.describe()}",
                )
            else:
                row = replace(
                    row,
                    value="(none)",
                    source="REDIS_URL unset and no embedded Redis runs: start one with "
                    "`aipool redis`",
                )
        elif row.name == "DATABASE_URL" and not current.database_url:
            if running is not None:
                row = replace(
                    row,
                    value=describe_database(running.database_url),
                    source=f"DATABASE_URL unset: the ledger of the {running.describe()}",
                )
            else:
                row = replace(
                    row,
                    value=f"sqlite:///{DEFAULT_SQLITE_PATH}",
                    source="default: DATABASE_URL unset, a SQLite file under ./var",
                )
        elif row.name in ("CELERY_BROKER_URL", "CELERY_RESULT_BACKEND") and row.value == "(unset)":
            row = replace(row, value="(REDIS_URL)", source="default: the pool's Redis")
        shown.append(row)
    return shown


def register(app: typer.Typer) -> None:
    app.command()(config)
