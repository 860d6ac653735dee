"""The ``aipool`` command: run, probe and explain the pool.

Each command is a thin shell over a plain function of the package; imports are local so that
``aipool route`` does not pay for the model SDKs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

app = typer.Typer(
    name="aipool",
    help="Celery worker pool for AI inference with local-first fallback.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()


@app.command()
def simulate(
    host: Annotated[
        str, typer.Option(help="Interface to listen on (loopback only).")
    ] = "127.0.0.1",
) -> None:
    """Run loopback stand-ins for Ollama, Gemini, Claude and NVIDIA, with an admin endpoint for faults."""
    from aipool.simulator import serve_forever

    serve_forever(host=host)


@app.command()
def submit(
    text: Annotated[str, typer.Argument(help="The prompt.")],
    tools_file: Annotated[
        Path | None,
        typer.Option(help="JSON file with a list of tools (name, description, parameters)."),
    ] = None,
    intent: Annotated[str | None, typer.Option(help="Override the intent classifier.")] = None,
    priority: Annotated[str, typer.Option(help="low, normal, high or critical.")] = "normal",
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the answer.")] = 120.0,
) -> None:
    """Send one request through the pool and print the result as JSON."""
    from tasks.client import submit as submit_request

    request: dict[str, Any] = {"prompt": text, "priority": priority, "user_id": "cli"}
    if intent:
        request["intent"] = intent
    if tools_file:
        request["tools"] = json.loads(tools_file.read_text(encoding="utf-8"))
    result = submit_request(request)
    console.print_json(json.dumps(result.get(timeout=timeout), ensure_ascii=False))


@app.command()
def route(text: Annotated[str, typer.Argument(help="A request text to route.")]) -> None:
    """Show the routing decision (intent, complexity, chain, reasons) for a text."""
    from aipool.routing.render import render_route
    from aipool.routing.router import explain

    render_route(explain(text), console)


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON.")] = False,
    serve: Annotated[
        bool, typer.Option(help="Serve GET /api/v1/health/ai-usage instead of printing once.")
    ] = False,
    port: Annotated[int, typer.Option(help="Port for --serve.")] = 8088,
    host: Annotated[str, typer.Option(help="Interface for --serve.")] = "0.0.0.0",
) -> None:
    """Breaker state and quota use per provider (the ai-usage health report)."""

    from aipool.health import serve as serve_health
    from aipool.health import usage_report
    from aipool.redis_url import connect, redis_url

    url = redis_url()
    if serve:
        serve_health(host, port, url)
        return
    report = usage_report(connect(url))
    if as_json:
        console.print_json(json.dumps(report))
        return
    from aipool.status_view import render_status

    render_status(report, console)


@app.command("cost-estimate")
def cost_estimate() -> None:
    """ADR-006 §4's monthly cost scenarios, computed from the price table."""
    from aipool.pricing import cost_estimate as estimate
    from aipool.pricing import render_cost_estimate

    render_cost_estimate(estimate(), console)


@app.command()
def report(
    day: Annotated[
        str | None, typer.Option(help="Local calendar day, YYYY-MM-DD (default: today).")
    ] = None,
    lang: Annotated[str | None, typer.Option(help="zh-TW (default) or en.")] = None,
) -> None:
    """Per-provider requests, success rate, tokens, cost and latency for a day and its month."""
    from datetime import UTC, date, datetime

    from aipool.budget import build_report, render_report
    from aipool.ledger.db import make_engine
    from aipool.ledger.periods import local_day, local_zone

    chosen = date.fromisoformat(day) if day else local_day(datetime.now(UTC), local_zone())
    render_report(build_report(make_engine(), chosen), console, lang=lang)


@app.command()
def migrate() -> None:
    """Create or upgrade the ledger tables (DATABASE_URL, default a SQLite file under ./var)."""
    from aipool.ledger.db import database_url
    from aipool.ledger.db import migrate as upgrade

    upgrade()
    console.print(f"ledger schema is current at {database_url().split('@')[-1]}")


@app.command()
def demo(
    requests: Annotated[int, typer.Option(help="Requests per scenario.")] = 1,
    redis_url: Annotated[
        str | None, typer.Option(help="Use this Redis instead of an embedded one.")
    ] = None,
) -> None:
    """Start simulated providers and a worker, then walk through routing and every fallback."""
    from aipool.demo import run_demo

    raise typer.Exit(run_demo(console, per_scenario=requests, redis_url=redis_url))


def main() -> None:
    """Console-script entry point."""
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    app()
