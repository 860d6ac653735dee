"""The console every command prints tables with.

Rich sizes output to the terminal, and to 80 columns when the output is not one (a pipe, a file,
a CI log), where the pool's tables then wrap into unreadable cells. Outside a terminal, and unless
``COLUMNS`` says otherwise, a table takes the width it needs.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console

#: Width outside a terminal: more than any of the pool's tables needs, so none wraps.
UNBOUNDED = 1000


def console() -> Console:
    """A console for stdout: the terminal's width, ``COLUMNS``, or wide enough for any table."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()
    return Console(width=UNBOUNDED)
