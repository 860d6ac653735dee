"""The pool's state as tables an operator reads at a glance (``aipool status``, ``aipool report``).

The usage tables use :mod:`aipool.views.usage_words`, so a count has the same name in every command.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from aipool.contract.vocabulary import outcome_word
from aipool.ledger.summary import ProviderSummary
from aipool.redis.replication import Replication
from aipool.views.fitted_table import FittedTable
from aipool.views.usage_words import summary_cells, summary_headers, words

_STATE_STYLE = {"closed": "green", "half_open": "yellow", "open": "bold red"}
_COLUMNS = ("rpm", "daily_requests", "daily_tokens", "monthly_tokens")


def _titled(title: str) -> FittedTable:
    # A title wider than its columns would wrap over several lines (Rich fits it to the table).
    return FittedTable(title=title, min_width=cell_len(title) + 4)


def _cell(entry: dict[str, Any] | None, lang: str) -> str:
    if not entry or entry.get("limit") is None:
        return words(lang)["unlimited"]
    used = entry.get("used") or 0
    return f"{used:,} / {entry['limit']:,}"


def render_status(
    report: dict[str, Any], console: Console, *, lang: str = "en", now: float | None = None
) -> None:
    """Print breaker state and quota use (used / limit) per provider, headings in ``lang``
    (breaker states are values, shown as the pool names them: closed, half_open, open), and
    beside it how long a provider's own rate limit still pauses it (as of ``now``)."""
    w = words(lang)
    now = time.time() if now is None else now
    table = _titled(w["breakers_title"])
    table.add_column(w["provider"])
    table.add_column(w["breaker"])
    for name in _COLUMNS:
        table.add_column(w[f"quota_{name}"], justify="right")
    for provider, entry in report.items():
        state = str(entry["breaker"].get("state", "?"))
        style = _STATE_STYLE.get(state, "")
        quota = entry.get("quota", {})
        cell = f"[{style}]{state}[/]" if style else state
        paused_until = entry["breaker"].get("paused_until")
        if paused_until and paused_until > now:
            cell += f", [yellow]{outcome_word('rate_limited', lang)} {paused_until - now:.0f} s[/]"
        table.add_row(provider, cell, *(_cell(quota.get(name), lang) for name in _COLUMNS))
    console.print(table)


def summary_table(summaries: Sequence[ProviderSummary], *, lang: str, title: str) -> Table:
    """Per provider: calls, failed (by reason), skipped, answered, tokens, cost, p50/p95."""
    table = FittedTable(title=title)
    for i, header in enumerate(summary_headers(lang)):
        table.add_column(header, justify="left" if i == 0 else "right")
    for s in summaries:
        table.add_row(*summary_cells(s, lang))
    if not summaries:
        # A period without a hop: nothing counted, and no latency to show (not a 0 ms one).
        table.add_row(*summary_cells(ProviderSummary(words(lang)["none"]), lang))
    return table


def render_summary(
    summaries: Sequence[ProviderSummary], console: Console, *, lang: str, title: str
) -> None:
    """Print :func:`summary_table` with ``title`` (the period) and the period's total cost."""
    total = sum((s.cost_usd for s in summaries), Decimal(0))
    console.print(summary_table(summaries, lang=lang, title=f"{title}  ${total:.4f}"))


def render_queues(
    depths: dict[str, int],
    console: Console,
    *,
    lang: str,
    ages: dict[str, float] | None = None,
    consumers: dict[str, int] | None = None,
) -> None:
    """Print the messages waiting per queue and lane, how long the oldest has waited and how many
    workers consume it; a lane where messages wait and no worker consumes is shown in red and
    named below the table."""
    w = words(lang)
    table = _titled(w["queues_title"])
    table.add_column(w["queue"])
    table.add_column(w["waiting"], justify="right")
    if ages:
        table.add_column(w["oldest"], justify="right")
    if consumers is not None:
        table.add_column(w["consumers"], justify="right")
    unserved = []
    for queue, depth in depths.items():
        cells = [queue, f"{depth:,}"]
        if ages:
            cells.append(f"{ages[queue]:.1f} s" if depth and queue in ages else "")
        style = ""
        if consumers is not None:
            count = consumers.get(queue, 0)
            cells.append(f"{count:,}")
            if depth and not count:
                style = "bold red"
                unserved.append(queue)
        table.add_row(*cells, style=style or None)
    console.print(table)
    if unserved:
        line = w["unserved"].format(lanes=", ".join(unserved))
        console.print(f"[bold red]{line}[/]", highlight=False, soft_wrap=True)


def render_replication(replication: Replication | None, console: Console, *, lang: str) -> None:
    """The master the pool writes to (the one the sentinels name now) and each replica's lag;
    nothing for one Redis without replicas."""
    if replication is None:
        return
    w = words(lang)
    line = w["replication_master"].format(address=replication.master)
    if replication.sentinel_master is not None:
        line += w["replication_sentinel"].format(name=replication.sentinel_master)
    console.print(line, highlight=False, soft_wrap=True)
    for replica in replication.replicas:
        console.print(
            w["replica"].format(
                address=replica.address,
                state=replica.state,
                lag=replica.lag_s,
                behind=replica.behind_bytes,
            ),
            highlight=False,
            soft_wrap=True,
        )
    if not replication.replicas:
        console.print(w["replication_none"], highlight=False, soft_wrap=True)
