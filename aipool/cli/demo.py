"""``aipool demo``: ADR-006's story in about a minute, on embedded defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from aipool.cli.console import console


def _folder(value: Path) -> Path:
    # Checked before the story starts: a minute of demo must not end in "no such file".
    if value.exists() and not value.is_dir():
        raise typer.BadParameter(f"{value} exists and is not a folder")
    try:
        value.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise typer.BadParameter(f"cannot make the folder {value}: {exc.strerror}") from None
    if not os.access(value, os.W_OK):
        raise typer.BadParameter(f"cannot write in {value}")
    return value


def demo(
    out: Annotated[
        Path,
        typer.Option(
            callback=_folder, help="Folder for the report (Markdown, JSON) and the PNG chart."
        ),
    ] = Path("aipool-demo"),
    keep: Annotated[
        bool, typer.Option(help="Keep the demo's data directory (Redis log, ledger, worker log).")
    ] = False,
) -> None:
    """Start simulated providers, an embedded Redis and a worker, then walk through routing,
    an outage, quotas, tools, the static answer and the budget alert; stop everything."""
    # deferred: `aipool` imports every command at start; only this one loads aipool.demo (a little)
    from aipool.demo import run_demo

    raise typer.Exit(run_demo(out=out, keep=keep, console=console()))


def register(app: typer.Typer) -> None:
    app.command()(demo)
