"""``bench/run --write``: a run's figures kept in ``docs/benchmarks.json`` and shown in
``docs/benchmarks.md``, between two markers, so the page's prose stays and its tables follow the
last run written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.figures import Report, _shown

ROOT = Path(__file__).resolve().parents[1]
JSON_PATH = ROOT / "docs" / "benchmarks.json"
PAGE_PATH = ROOT / "docs" / "benchmarks.md"
START = "<!-- bench/run --write: the tables below are generated; edit bench/page.py -->"
END = "<!-- bench/run --write: end -->"


def check(page: Path = PAGE_PATH) -> None:
    """Stop before a run whose figures would have no place on ``page``."""
    text = page.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"{page} has no generated section ({START} ... {END})")


def write(
    report: Report, run: dict[str, Any], json_path: Path = JSON_PATH, page: Path = PAGE_PATH
) -> None:
    """Keep the run (``run``: machine, date, load, duration) and its figures; regenerate the
    page's tables. The page must hold both markers."""
    data = {**run, "figures": [figure.to_dict() for figure in report.figures]}
    json_path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    check(page)
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    block = f"{START}\n\n{tables(data)}\n{END}"
    page.write_text(pattern.sub(lambda _: block, text), encoding="utf-8")


def tables(data: dict[str, Any]) -> str:
    """The markdown of a run: the run line, the table against plain Celery, every figure."""
    figures = data["figures"]
    machine = data.get("machine", {})
    lines = [
        f"Run of {data.get('date', '?')}, commit `{machine.get('commit', '?')}`, "
        f"`bench/run{' --quick' if data.get('quick') else ''}`, {data.get('duration_s', 0):.0f} s; "
        f"{machine.get('cpus', '?')} CPUs ({machine.get('cpu', '?')}), load average "
        f"{data.get('load_average', '?')} at the start; Python {machine.get('python', '?')}, "
        f"Redis {machine.get('redis_server', '?')}, Celery {machine.get('celery', '?')}. "
        f"{sum(1 for f in figures if f['met'] is True)} targets met, "
        f"{sum(1 for f in figures if f['met'] is False)} missed.",
        "",
    ]
    plain = [
        f for f in figures if f["group"] in ("plain", "network") and "added at p50" in f["figure"]
    ]
    if plain:
        lines += [
            "| request, run | pool p50 / p95 / p99 | plain Celery p50 / p95 / p99 | added p50 [95% CI] | added p99 | pool's app without its logic, p50 | met |",
            "|---|---|---|---|---|---|---|",
        ]
        for figure in plain:
            d = figure["details"]
            at99 = _p99_figure(figures, figure)
            low, high = d.get("added_p50_ci95_ms") or (None, None)
            trips = d.get("round_trips_added")
            per_trip = d.get("round_trip_through_proxy_ms") or 0.0
            in_trips = (
                f" ({trips:.1f} round trips of {per_trip:.2f} ms)" if trips is not None else ""
            )
            lines.append(
                f"| {figure['figure'].removesuffix(': added at p50')} "
                f"| {_ms(d.get('pool_p50_ms'))} / {_ms(d.get('pool_p95_ms'))} / {_ms(d.get('pool_p99_ms'))} "
                f"| {_ms(d.get('plain_p50_ms'))} / {_ms(d.get('plain_p95_ms'))} / {_ms(d.get('plain_p99_ms'))} "
                f"| **{_ms(figure['value'])}** [{_ms(low)}, {_ms(high)}]"
                f"{in_trips} "
                f"| {_ms(at99['value']) if at99 else '-'} "
                f"| {_ms(d.get('same_app_p50_ms'))} "
                f"| {_verdict(figure['met'])}{'' if at99 is None else ' / ' + _verdict(at99['met'])} |"
            )
        lines.append("")
    lines += ["| group | figure | value | baseline | target | met |", "|---|---|---|---|---|---|"]
    for figure in figures:
        baseline = (
            f"{_shown(figure['baseline'])} {figure['unit']} ({figure['baseline_name']})"
            if figure["baseline"] is not None
            else figure["baseline_name"] or ""
        )
        lines.append(
            f"| {figure['group']} | {figure['figure']} | {_shown(figure['value'])} {figure['unit']} "
            f"| {baseline} | {figure['target'] or ''} | {_verdict(figure['met'])} |"
        )
    return "\n".join(lines) + "\n"


def _p99_figure(figures: list[dict[str, Any]], at50: dict[str, Any]) -> dict[str, Any] | None:
    name = at50["figure"].replace("added at p50", "added at p99")
    return next((f for f in figures if f["figure"] == name), None)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def _verdict(met: bool | None) -> str:
    return {True: "yes", False: "**no**", None: ""}[met]
