"""The demo's picture: which provider answered over time, and what the answers cost."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aipool.demo.stage import Sent
from aipool.providers.catalog import CATALOG

#: Rows of the upper plot, top to bottom, and their colours.
ANSWERERS = {
    **{name: facts.colour for name, facts in CATALOG.items()},
    "static": "#9e9e9e",
    "refuse": "#6d6875",
}


def draw(sent: Sequence[Sent], marks: Sequence[tuple[float, str]], path: Path) -> None:
    """Write a PNG of the demo's requests: answers by provider over time above, cumulative cost
    below, a dashed line at each of ``marks`` (seconds since the start, what happened)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the demo may run on a server or in CI
    import matplotlib.pyplot as plt

    rows = list(ANSWERERS)
    fig, (answers, cost) = plt.subplots(
        2, 1, figsize=(10, 6), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    for provider, colour in ANSWERERS.items():
        times = [s.at for s in sent if s.answer.get("provider") == provider]
        answers.scatter(times, [rows.index(provider)] * len(times), color=colour, s=40)
    answers.set_yticks(range(len(rows)), rows)
    answers.invert_yaxis()
    answers.set_title("Which provider answered (each dot is a request)", pad=40)
    for at, text in marks:
        for axis in (answers, cost):
            axis.axvline(at, color="#cccccc", linestyle="--", linewidth=0.8)
        answers.text(
            at,
            1.01,
            text,
            transform=answers.get_xaxis_transform(),
            fontsize=7,
            rotation=30,
            color="#555555",
        )
    total = 0.0
    times, totals = [0.0], [0.0]
    for s in sent:
        total += float(s.answer.get("cost_usd") or 0)
        times.append(s.at)
        totals.append(total)
    cost.step(times, totals, where="post", color="#d97757")
    cost.set_ylabel("USD")
    cost.set_xlabel("seconds since the demo started")
    cost.set_title(f"Cumulative cost (${total:.6f})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
