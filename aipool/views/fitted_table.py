"""A table that stays readable in any terminal: itself where its columns fit, one block per row
where they would not.

Rich fits a table wider than the terminal by wrapping and then cutting its cells: at 80 columns
``aipool status`` showed ``clau…``, ``gemi…`` and costs as ``0.00…``, and the daily report's
110-column notification cut its headers. A number or a provider's name cut short is worse than
none, so where the table's widest cells do not fit, it is shown as each row's first cell on a line
of its own and its other cells below, one per line, beside their column's heading. (Rich cuts
cells even where the table's minimum width, each cell wrapped at its words, would fit: its column
widths shrink by ratio; so the table's whole width is what is compared.)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.style import Style
from rich.table import Table
from rich.text import Text

#: Width a table is measured in for its natural size: wider than any of the pool's tables.
_UNBOUNDED = 10_000


class FittedTable(Table):
    """A :class:`rich.table.Table` shown stacked, row by row, where its natural width (every cell
    on one line) is wider than the space it is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stack_rows: list[tuple[tuple[RenderableType | None, ...], str | Style | None]] = []

    def add_row(
        self,
        *renderables: RenderableType | None,
        style: str | Style | None = None,
        end_section: bool = False,
    ) -> None:
        self._stack_rows.append((renderables, style))
        super().add_row(*renderables, style=style, end_section=end_section)

    def natural_width(self, console: Console, options: ConsoleOptions) -> int:
        """The width with every cell on one line."""
        return Measurement.get(console, options.update_width(_UNBOUNDED), self).maximum

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.natural_width(console, options) <= options.max_width:
            yield from super().__rich_console__(console, options)
            return
        yield from self._stacked()

    def _stacked(self) -> Iterator[RenderableType]:
        if self.title:
            yield Text.from_markup(str(self.title), style="bold")
        headings = [" ".join(Text.from_markup(str(c.header)).plain.split()) for c in self.columns]
        for cells, style in self._stack_rows:
            first, *rest = cells
            yield Text.assemble(_text(first), style=style or "bold")
            block = Table.grid(padding=(0, 2))
            block.add_column(style="dim", no_wrap=True)
            block.add_column()
            for heading, cell in zip(headings[1:], rest, strict=False):
                block.add_row(Text(f"  {heading}"), _text(cell))
            yield block


def _text(cell: RenderableType | None) -> Text:
    if cell is None:
        return Text("")
    if isinstance(cell, Text):
        return cell
    return Text.from_markup(str(cell))
