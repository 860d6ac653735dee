"""``bench/run --write``: a run's figures kept in ``docs/benchmarks.json`` and shown in
``docs/benchmarks.md``, between two markers, so the page's prose stays and its tables follow the
last run written."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.done_when import verdicts
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
    """Keep the run (``run``: machine, date, load, duration, groups) and its figures; regenerate
    the page's tables. The page must hold both markers.

    Every figure carries the commit and date of the run that measured it. A run of some groups
    (``--only``) replaces those groups' figures and keeps the others' from the runs that
    measured them, so the page shows every group, each with its own commit."""
    machine = run.get("machine", {})
    measured = [
        {
            **figure.to_dict(),
            "commit": machine.get("commit", "?"),
            "date": run.get("date", "?"),
            "quick": bool(run.get("quick")),
        }
        for figure in report.figures
    ]
    data = {**run, "figures": merged(measured, run.get("groups", []), _earlier(json_path))}
    json_path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    check(page)
    text = page.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    block = f"{START}\n\n{tables(data)}\n{END}"
    page.write_text(pattern.sub(lambda _: block, text), encoding="utf-8")


def _earlier(json_path: Path) -> list[dict[str, Any]]:
    """The figures kept by the last run written, each with its commit and date (a file written
    before figures carried them gives its run's)."""
    if not json_path.exists():
        return []
    data = json.loads(json_path.read_text(encoding="utf-8"))
    machine = data.get("machine", {})
    return [
        {
            **figure,
            "commit": figure.get("commit", machine.get("commit", "?")),
            "date": figure.get("date", data.get("date", "?")),
            "quick": figure.get("quick", bool(data.get("quick"))),
        }
        for figure in data.get("figures", [])
    ]


def merged(
    measured: list[dict[str, Any]], groups: list[str], earlier: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``measured`` (the figures of ``groups``) and the ``earlier`` figures of every other group,
    in ``bench/run``'s order of groups."""
    from bench.main import GROUPS

    # A figure's group is the group of bench/run that measures it.
    kept = [figure for figure in earlier if figure["group"] not in groups]
    order = {group: i for i, group in enumerate(GROUPS)}
    return sorted(kept + measured, key=lambda figure: order.get(figure["group"], len(order)))


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
    lines += ["Issue #44, done when:", ""]
    lines += [f"- {line}" for line in verdicts(figures)]
    lines.append("")
    earlier = _earlier_runs(figures, machine.get("commit", "?"))
    if earlier:
        lines += [
            "Figures kept from earlier runs (their groups were not in this one): "
            + "; ".join(earlier)
            + ". Each figure's commit is in its row.",
            "",
        ]
    plain = [
        f for f in figures if f["group"] in ("plain", "network") and "added at p50" in f["figure"]
    ]
    if plain:
        lines += [
            "| request, run | pool p50 / p95 / p99 | plain Celery p50 / p95 / p99 | added p50 [95% CI] | added p99 | pool's app without its logic, p50 | met | commit |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for figure in plain:
            d = figure["details"]
            at99 = _p99_figure(figures, figure)
            low, high = d.get("added_p50_ci95_ms") or (None, None)
            in_trips = _round_trips(d)
            lines.append(
                f"| {figure['figure'].removesuffix(': added at p50')} "
                f"| {_ms(d.get('pool_p50_ms'))} / {_ms(d.get('pool_p95_ms'))} / {_ms(d.get('pool_p99_ms'))} "
                f"| {_ms(d.get('plain_p50_ms'))} / {_ms(d.get('plain_p95_ms'))} / {_ms(d.get('plain_p99_ms'))} "
                f"| **{_ms(figure['value'])}** [{_ms(low)}, {_ms(high)}]"
                f"{in_trips} "
                f"| {_ms(at99['value']) if at99 else '-'} "
                f"| {_ms(d.get('same_app_p50_ms'))} "
                f"| {_verdict(figure['met'])}{'' if at99 is None else ' / ' + _verdict(at99['met'])} "
                f"| {_commit(figure)} |"
            )
        lines.append("")
    lines += [
        "| group | figure | value | baseline | target | met | commit |",
        "|---|---|---|---|---|---|---|",
    ]
    for figure in figures:
        baseline = (
            f"{_shown(figure['baseline'])} {figure['unit']} ({figure['baseline_name']})"
            if figure["baseline"] is not None
            else figure["baseline_name"] or ""
        )
        lines.append(
            f"| {figure['group']} | {figure['figure']} | {_shown(figure['value'])} {figure['unit']} "
            f"| {baseline} | {figure['target'] or ''} | {_verdict(figure['met'])} "
            f"| {_commit(figure)} |"
        )
    return "\n".join(lines) + "\n"


def _p99_figure(figures: list[dict[str, Any]], at50: dict[str, Any]) -> dict[str, Any] | None:
    name = at50["figure"].replace("added at p50", "added at p99")
    return next((f for f in figures if f["figure"] == name), None)


def _earlier_runs(figures: list[dict[str, Any]], commit: str) -> list[str]:
    """For each earlier run whose figures the page keeps: its commit, date and groups."""
    runs: dict[tuple[str, str], list[str]] = {}
    for figure in figures:
        if figure.get("commit", commit) != commit:
            groups = runs.setdefault((figure["commit"], figure.get("date", "?")), [])
            if figure["group"] not in groups:
                groups.append(figure["group"])
    return [
        f"{', '.join(groups)} from commit `{run_commit}` ({date})"
        for (run_commit, date), groups in runs.items()
    ]


def _commit(figure: dict[str, Any]) -> str:
    return f"`{figure.get('commit', '?')}`{' (quick)' if figure.get('quick') else ''}"


def _round_trips(details: dict[str, Any]) -> str:
    """Redis a network away: the time added in round trips of the proxy's delay, in round trips
    of a ``PING`` through it, and the commands counted."""
    trips = details.get("round_trips_added")
    if trips is None:
        return ""
    per_trip = details.get("round_trip_through_proxy_ms") or 0.0
    shown = f" ({trips:.1f} round trips of {details.get('delay_ms', per_trip):.2f} ms"
    by_ping = details.get("round_trips_added_by_ping")
    if by_ping is not None and "delay_ms" in details:
        shown += f", {by_ping:.1f} of a {per_trip:.2f} ms PING"
    pool, plain = (
        details.get("pool_commands_per_request"),
        details.get("plain_commands_per_request"),
    )
    if pool is not None and plain is not None:
        shown += f"; {pool:.1f} commands sent against {plain:.1f}"
    return shown + ")"


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}"


def _verdict(met: bool | None) -> str:
    return {True: "yes", False: "**no**", None: ""}[met]
