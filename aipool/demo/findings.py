"""What the demo found, checked and written down: the ledger drained and summarised per provider,
the breaker transitions with their times, the alerts the channel received; as Markdown for
people and JSON for programs, beside the chart."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from aipool.demo.alert_sink import ReceivedAlert
from aipool.demo.chart import draw
from aipool.demo.settings import SHORTENED
from aipool.demo.stage import Check, Sent, Stage, trail
from aipool.demo.transitions import Transition
from aipool.ledger.summary import ProviderSummary
from aipool.views.usage_words import markdown_table, summary_cells, summary_headers

#: The breaker's round trip the outage scene must show, in order.
OLLAMA_ROUND_TRIP = (("closed", "open"), ("open", "half_open"), ("half_open", "closed"))
LANG = "en"


@dataclass
class Findings:
    started: float
    finished: float
    sent: list[Sent]
    summaries: list[ProviderSummary]
    ledger_rows: int
    pending: int
    transitions: list[Transition]
    alerts: list[ReceivedAlert]
    checks: list[Check]
    marks: list[tuple[float, str]]
    processes: dict[str, int] = field(default_factory=dict)
    data_dir: str = ""

    @property
    def answered(self) -> int:
        """Requests the ledger says were answered (by a provider, the static answer or refusal)."""
        return sum(s.answered for s in self.summaries)

    @property
    def attempts(self) -> int:
        """Hops the answers' trails list."""
        return sum(len(s.answer.get("attempts", [])) for s in self.sent)

    @property
    def cost(self) -> Decimal:
        return sum((s.cost_usd for s in self.summaries), Decimal(0))

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


def closing_checks(stage: Stage, f: Findings) -> None:
    """The story's last checks: the ledger holds every hop and adds up to the requests sent, the
    breaker went round once, and each alert reached the channel exactly once."""
    scene = "ledger and alerts"
    stage.check(scene, "the ledger is drained", f.pending == 0, f"{f.pending} waiting")
    stage.check(
        scene,
        "the report adds up to the requests sent",
        f.answered == len(f.sent),
        f"{f.answered} answered in the ledger, {len(f.sent)} sent",
    )
    stage.check(
        scene,
        "the ledger holds every hop of every answer",
        f.ledger_rows == f.attempts,
        f"{f.ledger_rows} rows, {f.attempts} hops",
    )
    seen = [(t.old, t.new) for t in f.transitions if t.provider == "ollama"]
    stage.check(
        scene,
        "Ollama's breaker went closed → open → half_open → closed",
        seen[:3] == list(OLLAMA_ROUND_TRIP),
        " → ".join(f"{old}->{new}" for old, new in seen) or "no transition logged",
    )
    for rule, provider, status in (
        ("breaker_open", "ollama", "firing"),
        ("breaker_open", "ollama", "resolved"),
        ("monthly_cost", "*", "firing"),
    ):
        n = sum(1 for a in f.alerts if (a.rule, a.provider, a.status) == (rule, provider, status))
        stage.check(
            scene, f"alert {rule} {provider} {status} received once", n == 1, f"{n} received"
        )


def _when(f: Findings, at: float) -> str:
    return f"+{at - f.started:5.1f} s"


def markdown(f: Findings) -> str:
    """The report as Markdown."""
    start = datetime.fromtimestamp(f.started, UTC).isoformat(timespec="seconds")
    lines = [
        "# aipool demo",
        "",
        f"Started {start}; the story took {f.finished - f.started:.0f} s: {len(f.sent)} requests, "
        f"{f.answered} answered in the ledger, {f.ledger_rows} hops recorded, "
        f"cost ${f.cost:.6f}. "
        + (
            "Every step behaved as ADR-006 says."
            if not f.failed
            else f"{len(f.failed)} step(s) did not."
        ),
        "",
        "Settings shortened for the demo: "
        + "; ".join(f"`{s.env}={s.value}` (ADR: {s.adr})" for s in SHORTENED)
        + ".",
        "",
        "## Per provider (from the ledger)",
        "",
        markdown_table(summary_headers(LANG), [summary_cells(s, LANG) for s in f.summaries]),
        "",
        "## Breaker transitions",
        "",
        markdown_table(
            ["when", "provider", "from", "to", "why"],
            [[_when(f, t.at), t.provider, t.old, t.new, t.reason] for t in f.transitions],
        ),
        "",
        "## Alerts sent",
        "",
        markdown_table(
            ["when", "rule", "provider", "threshold", "status", "summary"],
            [
                [_when(f, a.at), a.rule, a.provider, a.threshold, a.status, a.summary]
                for a in f.alerts
            ],
        ),
        "",
        "## Requests",
        "",
        markdown_table(
            ["when", "scene", "request", "status", "answered by", "hops"],
            [
                [
                    f"+{s.at:5.1f} s",
                    s.scene,
                    s.label,
                    str(s.answer.get("status")),
                    f"{s.answer.get('provider')} {s.answer.get('model') or ''}".strip(),
                    trail(s.answer),
                ]
                for s in f.sent
            ],
        ),
        "",
        "## Checks",
        "",
        markdown_table(
            ["scene", "check", "result", "detail"],
            [[c.scene, c.what, "ok" if c.ok else "FAILED", c.detail] for c in f.checks],
        ),
        "",
    ]
    return "\n".join(lines)


def as_json(f: Findings) -> dict[str, Any]:
    """The findings as plain JSON (what the tests read)."""
    return {
        "started": f.started,
        "finished": f.finished,
        "requests": len(f.sent),
        "answered": f.answered,
        "ledger_rows": f.ledger_rows,
        "hops": f.attempts,
        "pending": f.pending,
        "cost_usd": str(f.cost),
        "providers": [s.to_json() for s in f.summaries],
        "transitions": [asdict(t) for t in f.transitions],
        "alerts": [asdict(a) for a in f.alerts],
        "checks": [asdict(c) for c in f.checks],
        "processes": f.processes,
        "data_dir": f.data_dir,
        "answers": [
            {
                "at": s.at,
                "scene": s.scene,
                "status": s.answer.get("status"),
                "provider": s.answer.get("provider"),
                "cost_usd": s.answer.get("cost_usd"),
                "cached": bool(s.answer.get("cached")),
                "saved_usd": s.answer.get("saved_usd", 0.0),
            }
            for s in f.sent
        ],
    }


def write(f: Findings, out: Path) -> list[Path]:
    """Write ``report.md``, ``report.json`` and ``chart.png`` into ``out``; return the paths."""

    out.mkdir(parents=True, exist_ok=True)
    report = out / "report.md"
    report.write_text(markdown(f), encoding="utf-8")
    data = out / "report.json"
    data.write_text(json.dumps(as_json(f), ensure_ascii=False, indent=2), encoding="utf-8")
    chart = out / "chart.png"
    draw(f.sent, f.marks, chart)
    return [report, data, chart]
