"""``aipool schema``: the producer contract (request and result) as JSON Schema, draft 2020-12.

The same text as ``docs/contract.schema.json``: a producer in any language validates against it.
"""

from __future__ import annotations

import typer


def schema() -> None:
    """Print the producer contract as JSON Schema (draft 2020-12)."""
    # deferred: `aipool` imports every command at start; only this one loads aipool.contract.schema (~32 ms)
    from aipool.contract.schema import schema_text

    print(schema_text(), end="")


def register(app: typer.Typer) -> None:
    app.command()(schema)
