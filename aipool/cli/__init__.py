"""The ``aipool`` command: run, probe and explain the pool.

Each command lives in a module of its own, a thin shell over plain functions of the package;
heavy imports stay inside the commands, so ``aipool route`` does not pay for the model SDKs.

Every mistake ends in one line on stderr and an exit code: **2** for a mistake in what was typed
(an unknown option value, a malformed request, a day that does not exist), **1** when the command
could not do its job (no Redis, no worker on the queue, no answer in time, a database that cannot
be read). No traceback, unless ``--debug`` is given.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from difflib import get_close_matches
from typing import Annotated

import typer
from typer.exceptions import TyperException

from aipool.cli import (
    cost_estimate,
    demo,
    effective_settings,
    embedded,
    migrate,
    report,
    route,
    schema,
    simulate,
    status,
    submit,
    worker,
)
from aipool.cli.mistakes import USER_MISTAKE, exit_code_for, one_line

app = typer.Typer(
    name="aipool",
    help="Celery worker pool for AI inference with local-first fallback.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_debug = False


@app.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback when a command fails.")
    ] = False,
) -> None:
    global _debug
    _debug = debug
    effective_settings.refuse_invalid_settings()


for module in (
    simulate,
    submit,
    route,
    status,
    cost_estimate,
    report,
    migrate,
    demo,
    embedded,
    worker,
):
    module.register(app)
for module in (effective_settings, schema):
    module.register(app)


def _plain(text: str) -> str:
    # The docstrings are written for Sphinx too: ``code`` reads as `code` on a terminal.
    return text.replace("``", "`")


def _tidy_help(group: typer.Typer) -> None:
    """Give every command of ``group`` (and of its subgroups) its help in plain words, and its row
    in the listing as its first paragraph in one flowing line: typer keeps the docstring's line
    ends in the listing, which broke rows mid-sentence."""
    for info in group.registered_commands:
        text = _plain(info.help or inspect.getdoc(info.callback) or "")
        info.help = text
        info.short_help = info.short_help or " ".join(text.split("\n\n")[0].split())
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _tidy_help(sub.typer_instance)


_tidy_help(app)


class _OneLineLog(logging.Formatter):
    """What the package logs while a command runs (a warning, an observer that failed), one line
    each on stderr like the command's own messages; the traceback only with ``--debug``."""

    def format(self, record: logging.LogRecord) -> str:
        if _debug:
            return super().format(record)
        line = " ".join(record.getMessage().split())
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line += f" ({type(exc).__name__}: {' '.join(str(exc).split())})"
        return f"aipool: {line}"


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLineLog("aipool: %(name)s: %(message)s"))
    handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        return _run(argv)
    finally:
        root.removeHandler(handler)


def _run(argv: Sequence[str] | None) -> int:
    global _debug
    args = list(sys.argv[1:] if argv is None else argv)
    _debug = "--debug" in args
    try:
        result = app(args=args, prog_name="aipool", standalone_mode=False)
    except TyperException as exc:
        return _usage(exc)
    except typer.Abort:
        _say("aipool: interrupted")
        return 130
    except KeyboardInterrupt:
        _say("aipool: interrupted")
        return 130
    except Exception as exc:
        if _debug:
            traceback.print_exc()
        _say(one_line(exc, debug=_debug))
        return exit_code_for(exc)
    return result if isinstance(result, int) else 0


def _usage(exc: TyperException) -> int:
    """What was typed does not parse (exit 2), or a command stopped on purpose."""
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
        print(ctx.get_help())
        return 0
    code = int(getattr(exc, "exit_code", 1))
    _near_misses_only(exc)
    message = exc.format_message().replace("Value error, ", "")
    if code == USER_MISTAKE:
        command = ctx.command_path if ctx is not None else "aipool"
        _say(f"{command}: {message} (see `{command} --help`)")
    else:
        _say(f"aipool: {message}")
    return code


#: How close an unknown option must be to one the command has to be offered in its place. Click
#: offers any above difflib's default 0.6, which put ``--host`` beside ``--bogus``.
NEAR_MISS = 0.7


def _near_misses_only(exc: TyperException) -> None:
    """Keep only the near misses among the options an unknown one is said to resemble."""
    option, offered = getattr(exc, "option_name", None), getattr(exc, "possibilities", None)
    if type(exc).__name__ == "NoSuchOption" and option and offered:
        exc.possibilities = get_close_matches(option, offered, cutoff=NEAR_MISS)  # type: ignore[attr-defined]  # NoSuchOption's own


def _say(line: str) -> None:
    # Plain print, not Rich: Rich would wrap a long message over several lines.
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    """Console-script entry point."""
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    sys.exit(run())
