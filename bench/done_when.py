"""Issue #44's "Done when", one pass/fail line per target, from the figures that measure it.

A target passes when every figure it covers met its own target, fails when any missed, and is
"not measured" when the run had none of them (its group was not run). The figures carry the
targets themselves (:mod:`bench.plain`, :mod:`bench.network`); this only gathers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: (the target, as the issue words it; which figures measure it).
TARGETS: tuple[tuple[str, Callable[[str, str], bool]], ...] = (
    (
        "submit() adds ≤ 1.5 ms at p50 over plain Celery's hop, task events on",
        lambda group, name: (
            group == "plain"
            and name.startswith("submit()")
            and "task events on" in name
            and name.endswith("added at p50")
        ),
    ),
    (
        "submit() adds ≤ 2.0 ms at p50 over plain Celery's hop, Celery's defaults",
        lambda group, name: (
            group == "plain"
            and name.startswith("submit()")
            and "Celery's defaults" in name
            and name.endswith("added at p50")
        ),
    ),
    (
        "submit() adds ≤ 4 ms at p99",
        lambda group, name: (
            group == "plain" and name.startswith("submit()") and name.endswith("added at p99")
        ),
    ),
    (
        "by name at or below plain Celery's two hops (p50)",
        lambda group, name: (
            group == "plain" and name.startswith("by name") and name.endswith("added at p50")
        ),
    ),
    (
        "throughput of submit() ≥ 0.85× plain Celery at -c 1 and -c 4",
        lambda group, name: group == "plain" and name.startswith("throughput, submit()"),
    ),
    (
        "submit() costs ≤ 2 round trips more than plain Celery's hop, 0.5 ms per Redis command",
        lambda group, name: group == "network" and name.startswith("submit()"),
    ),
)


def verdicts(figures: list[dict[str, Any]]) -> list[str]:
    """One line per target: PASS, FAIL or not measured, then the values of its figures."""
    lines = []
    for target, covers in TARGETS:
        mine = [f for f in figures if f.get("met") is not None and covers(f["group"], f["figure"])]
        if not mine:
            lines.append(f"not measured  {target}")
            continue
        verdict = "PASS" if all(f["met"] for f in mine) else "FAIL"
        values = ", ".join(f"{_value(f)}{'' if f['met'] else ' ✗'}" for f in mine)
        # On the page, figures kept from earlier runs carry their commit (and were judged by
        # the targets of their day): the line says which commits it stands on.
        commits = sorted({f["commit"] for f in mine if "commit" in f})
        at = f" (commit {', '.join(commits)})" if commits else ""
        lines.append(f"{verdict}  {target}: {values}{at}")
    return lines


def _value(figure: dict[str, Any]) -> str:
    """A figure's value as its target reads it: a throughput as its ratio to plain Celery, time
    added with Redis a network away in round trips."""
    details = figure.get("details", {})
    if figure["unit"] == "req/s" and details.get("ratio") is not None:
        return f"{details['ratio']:.2f}x"
    if details.get("round_trips_added") is not None and figure["unit"] == "ms":
        return f"{details['round_trips_added']:.1f} round trips ({figure['value']:.2f} ms)"
    value = figure["value"]
    return (
        f"{value:.2f} {figure['unit']}" if isinstance(value, float) else f"{value} {figure['unit']}"
    )
