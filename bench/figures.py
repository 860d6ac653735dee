"""A benchmark figure: one measured value next to its baseline and its target, printed as JSON.

Every figure is printed as one JSON line the moment it is measured (so a run cut short still
leaves what it measured), and all of them again at the end as a table.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table


@dataclass
class Figure:
    """One measured figure.

    ``met`` is ``None`` for a figure reported without a target (context for the others).
    ``details`` holds the raw numbers behind ``value`` (both sides' percentiles, counts...).
    """

    group: str
    name: str
    value: float
    unit: str
    target: str = ""
    met: bool | None = None
    baseline: float | None = None
    baseline_name: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The figure as JSON-ready data, rounded."""
        return {
            "group": self.group,
            "figure": self.name,
            "value": _rounded(self.value),
            "unit": self.unit,
            "baseline": _rounded(self.baseline),
            "baseline_name": self.baseline_name or None,
            "target": self.target or None,
            "met": self.met,
            "details": {key: _rounded(value) for key, value in self.details.items()},
        }

    def to_json(self) -> str:
        """The figure as one line of JSON."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


def percentile(samples: Iterable[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``samples``, by linear interpolation."""
    ordered = sorted(samples)
    if not ordered:
        return math.nan
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=1000, method="inclusive")[
        min(998, max(0, round(q * 1000) - 1))
    ]


def p50(samples: Iterable[float]) -> float:
    """The median."""
    return percentile(samples, 0.5)


def p99(samples: Iterable[float]) -> float:
    """The 99th percentile."""
    return percentile(samples, 0.99)


class Report:
    """Collects figures, printing each as JSON the moment it is added."""

    def __init__(self, out: Any = None) -> None:
        self.figures: list[Figure] = []
        self.out = out or sys.stdout

    def add(self, figure: Figure) -> Figure:
        """Record ``figure`` and print its JSON line."""
        self.figures.append(figure)
        print(figure.to_json(), file=self.out, flush=True)
        return figure

    def table(self, console: Console) -> None:
        """Print every figure with its baseline, its target and whether it is met."""
        table = Table(title="aipool benchmark", show_lines=False)
        for column, justify in (
            ("group", "left"),
            ("figure", "left"),
            ("value", "right"),
            ("baseline", "right"),
            ("target", "left"),
            ("met", "center"),
        ):
            table.add_column(column, justify=justify)  # type: ignore[arg-type]
        for figure in self.figures:
            baseline = (
                f"{_shown(figure.baseline)} {figure.unit} ({figure.baseline_name})"
                if figure.baseline is not None
                else figure.baseline_name
            )
            verdict = {True: "[green]yes[/]", False: "[red]NO[/]", None: "[dim]-[/]"}[figure.met]
            table.add_row(
                figure.group,
                figure.name,
                f"{_shown(figure.value)} {figure.unit}",
                baseline,
                figure.target or "-",
                verdict,
            )
        console.print(table)
        missed = [f for f in self.figures if f.met is False]
        met = [f for f in self.figures if f.met is True]
        console.print(f"{len(met)} targets met, {len(missed)} missed")


def _shown(value: float | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if abs(value) >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.2f}"
