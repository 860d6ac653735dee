"""``aipool route``: why a text goes where it goes; judge the router; teach it.

* ``aipool route "TEXT"`` (or ``aipool route explain "TEXT"``): the decision, the rule or the
  model's top features, and the words that matched. The operator typed the text, so the screen may
  show it; the route that is stored never does.
* ``aipool route eval FILE``: accuracy, macro-F1, confusion matrices and the tier matrix's prices.
* ``aipool route train --examples FILE --output MODEL``: a model file trained on the shipped corpus
  plus the operator's examples, for ``AIPOOL_ROUTING_MODEL_FILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from aipool.cli.console import console
from aipool.routing.evaluate import (
    INTENTS,
    LabelledFileError,
    complexity_label,
    evaluate,
    read_labelled,
    read_rows,
)
from aipool.routing.render import render_evaluation, render_route
from aipool.routing.router import explain


class _RouteGroup(TyperGroup):
    """``aipool route TEXT`` keeps working: a first argument that names no subcommand is the text
    of ``explain``."""

    # ``ctx`` is typer's own (vendored) click Context; Any keeps this override compatible with it.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["explain", *args]
        return super().parse_args(ctx, args)


route_app = typer.Typer(
    cls=_RouteGroup,
    help="Show, judge and teach the routing decision.",
    no_args_is_help=True,
    add_completion=False,
)


@route_app.command("explain")
def explain_command(text: Annotated[str, typer.Argument(help="A request text to route.")]) -> None:
    """Show the routing decision (intent, complexity, tier, chain, reasons) for a text."""
    if not text.strip():
        raise typer.BadParameter("the text is empty", param_hint="TEXT")

    render_route(explain(text), console(), text=text)


def _labelled_file(path: Path, param: str = "FILE") -> Path:
    if not path.is_file():
        raise typer.BadParameter(f"no such file: {path}", param_hint=param)
    return path


@route_app.command("eval")
def eval_command(
    file: Annotated[
        Path,
        typer.Argument(
            help="Labelled requests: JSONL or TSV (text, intent[, complexity[, tier]])."
        ),
    ],
    misses: Annotated[int, typer.Option(help="List at most this many misses.", min=0)] = 20,
) -> None:
    """Judge the router on labelled requests: accuracy, macro-F1, confusion and tier matrices."""

    try:
        rows = read_labelled(_labelled_file(file))
    except LabelledFileError as exc:
        raise typer.BadParameter(str(exc), param_hint="FILE") from None
    render_evaluation(evaluate(rows), console(), misses=misses)


@route_app.command("train")
def train_command(
    examples: Annotated[
        Path,
        typer.Option(
            "--examples",
            help="Your labelled requests: JSONL or TSV (text, intent[, complexity 1-5]).",
        ),
    ],
    output: Annotated[Path, typer.Option("--output", help="Where to write the model file.")] = Path(
        "intent_model.json"
    ),
    epochs: Annotated[
        int,
        typer.Option(
            "--epochs",
            min=1,
            max=10_000,
            help="Passes over the examples: 300 (the shipped model's) by default; fewer for a "
            "quick trial of your labels (20 takes a tenth of the time, and is less sure).",
        ),
    ] = 300,  # aipool.routing.train.EPOCHS, not imported here: it loads numpy
) -> None:
    """Train an intent model on the shipped corpus plus your examples; point
    AIPOOL_ROUTING_MODEL_FILE at the file it writes."""

    try:
        rows = read_rows(_labelled_file(examples, "--examples"))
        extra = _training_rows(rows)
    except LabelledFileError as exc:
        raise typer.BadParameter(str(exc), param_hint="--examples") from None
    if output.exists() and output.is_dir():
        raise typer.BadParameter(f"{output} is a directory", param_hint="--output")
    # deferred: `aipool` imports every command at start; only this one loads numpy (~133 ms)
    from aipool.routing.train import train_with

    written = train_with(extra, output, source=str(examples), epochs=epochs)
    out = console()
    out.print(
        f"wrote {output}: {written['trained']['examples']} examples "
        f"({len(extra)} yours), {written['trained']['features']} features"
    )
    out.print(
        f"point the workers and producers at it: AIPOOL_ROUTING_MODEL_FILE={output.resolve()}"
    )


def _training_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The operator's rows as corpus rows (``text``, ``intent``, ``complexity`` or None); a bad
    row names its line."""

    out = []
    for row in rows:
        text = row.get("text")
        if text is None and isinstance(row.get("request"), dict):
            text = row["request"].get("prompt")
        intent = row.get("intent", row.get("label"))
        if not isinstance(text, str) or not text.strip():
            raise LabelledFileError(f"{row['_where']}: needs a non-empty 'text'")
        if not isinstance(intent, str) or intent.upper() not in INTENTS:
            raise LabelledFileError(
                f"{row['_where']}: 'intent' must be one of {', '.join(INTENTS)}"
            )
        complexity = complexity_label(row, row["_where"])
        # A row with its complexity teaches the complexity head too; one without, the intent only.
        out.append(
            {
                "text": text,
                "intent": intent.upper(),
                "complexity": complexity,
                "tools": row.get("tools"),
            }
        )
    return out


def register(app: typer.Typer) -> None:
    app.add_typer(route_app, name="route")
