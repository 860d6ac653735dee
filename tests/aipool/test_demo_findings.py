"""The demo's closing checks fail when the ledger does not add up or an alert repeats."""

from __future__ import annotations

import io
import time

from rich.console import Console

from aipool.demo.alert_sink import ReceivedAlert
from aipool.demo.findings import Findings, closing_checks, markdown
from aipool.demo.stage import Sent, Stage
from aipool.demo.transitions import Transition
from aipool.ledger.summary import ProviderSummary

HOP = {"provider": "ollama", "outcome": "ok"}


def _findings(answered: int, alerts: list[ReceivedAlert]) -> Findings:
    now = time.time()
    sent = [
        Sent("s", f"r{i}", 1.0, {"status": "ok", "provider": "ollama", "attempts": [HOP]})
        for i in range(3)
    ]
    return Findings(
        started=now,
        finished=now + 5,
        sent=sent,
        summaries=[ProviderSummary("ollama", calls=answered, ok=answered, answered=answered)],
        ledger_rows=3,
        pending=0,
        transitions=[
            Transition(now, "ollama", "closed", "open", "3 consecutive failures"),
            Transition(now, "ollama", "open", "half_open", "recovery timeout passed"),
            Transition(now, "ollama", "half_open", "closed", "trial call succeeded"),
        ],
        alerts=alerts,
        checks=[],
        marks=[],
    )


def _alert(rule: str, provider: str, status: str) -> ReceivedAlert:
    return ReceivedAlert(time.time(), status, rule, provider, "", rule)


GOOD_ALERTS = [
    _alert("breaker_open", "ollama", "firing"),
    _alert("breaker_open", "ollama", "resolved"),
    _alert("monthly_cost", "*", "firing"),
]


def _stage() -> Stage:
    return Stage(console=Console(file=io.StringIO()), sim=None, redis=None)  # type: ignore[arg-type]


def test_a_ledger_that_adds_up_passes():
    stage = _stage()
    closing_checks(stage, _findings(3, GOOD_ALERTS))
    assert stage.failed == []


def test_a_ledger_missing_an_answer_fails_the_demo():
    stage = _stage()
    closing_checks(stage, _findings(2, GOOD_ALERTS))
    assert [c.what for c in stage.failed] == ["the report adds up to the requests sent"]


def test_an_alert_sent_twice_fails_the_demo():
    stage = _stage()
    closing_checks(stage, _findings(3, [*GOOD_ALERTS, _alert("monthly_cost", "*", "firing")]))
    assert [c.detail for c in stage.failed] == ["2 received"]


def test_the_markdown_report_says_which_steps_failed():
    f = _findings(2, GOOD_ALERTS)
    stage = _stage()
    closing_checks(stage, f)
    f.checks = stage.checks
    assert "1 step(s) did not." in markdown(f)
