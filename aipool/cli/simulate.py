"""``aipool simulate``: loopback stand-ins for the four providers, with a fault admin endpoint."""

from __future__ import annotations

from typing import Annotated

import typer


def simulate(
    host: Annotated[
        str, typer.Option(help="Interface to listen on (loopback unless in a container).")
    ] = "127.0.0.1",
) -> None:
    """Run loopback stand-ins for Ollama, Gemini, Claude and NVIDIA, with an admin endpoint for faults."""
    from aipool.simulator import serve_forever

    serve_forever(host=host)


def register(app: typer.Typer) -> None:
    app.command()(simulate)
