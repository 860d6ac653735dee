"""Figures the reliability suite measures, for the README's Guarantees table.

Each figure is printed (``pytest -s`` shows it) and, when ``AIPOOL_RELIABILITY_REPORT`` names a
file, appended to it as one JSON line: ``{"scenario", "figure", "value", "unit"}``.
"""

from __future__ import annotations

import json
import os
from typing import Any

REPORT_ENV = "AIPOOL_RELIABILITY_REPORT"


def record_figure(scenario: str, figure: str, value: Any, unit: str = "") -> None:
    """Print one measured figure and append it to the report file, if one is named."""
    line = {"scenario": scenario, "figure": figure, "value": value, "unit": unit}
    print(f"[reliability] {scenario}: {figure} = {value}{(' ' + unit) if unit else ''}")
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as report:
            report.write(json.dumps(line, ensure_ascii=False) + "\n")
