"""A service's budget alerts (issue #24): its month against its own budget, once per threshold
per service per month, sent to the pool's channels and to the owner the route table names."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, select

from aipool.budget import run_budget_checks
from aipool.ledger.models import AlertEvent, usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import _row
from aipool.notify import notifiers_from_env

TAIPEI = ZoneInfo("Asia/Taipei")
DAY = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, http_sink: Any, smtp_server: Any):  # type: ignore[no-untyped-def]
    """batch ($1 a month, owner: a webhook) and triage ($1, owner: an e-mail address); the pool's
    own channels: a webhook and e-mail to ops; the pool's budget far away."""
    controller, _ = smtp_server
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[[rules]]\nname = "all"\nprovider = "gemini"\n\n'
        f'[services.batch]\nname = "Nightly summaries"\nmonthly_budget_usd = 1\n'
        f'owner = "{http_sink.url}/batch-owner"\n\n'
        '[services.triage]\nname = "Alert triage"\nmonthly_budget_usd = 1\n'
        'owner = "triage-lead@example.test"\n\n'
        "[services.copilot]\n",
        encoding="utf-8",
    )
    env = {
        "AIPOOL_ROUTES_FILE": str(routes),
        "AIPOOL_MONTHLY_BUDGET_USD": "1000",
        "AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook",
        "AIPOOL_SMTP_HOST": "127.0.0.1",
        "AIPOOL_SMTP_PORT": str(controller.port),
        "AIPOOL_SMTP_FROM": "aipool@example.test",
        "AIPOOL_SMTP_TO": "ops@example.test",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AIPOOL_ALERTS", raising=False)
    return env


def _spend(engine: Engine, service: str, cost: str, at: datetime) -> None:
    record = UsageRecord(
        f"{service}-{uuid.uuid4().hex}", 0, "gemini", "m", "ok", True, input_tokens=100,
        cost_usd=Decimal(cost), created_at=at, service=service,
    )  # fmt: skip
    with engine.begin() as conn:
        conn.execute(usage_logs.insert(), [_row(record)])


def test_given_a_service_past_half_its_budget_then_its_owner_is_told_once_per_threshold(
    engine: Engine, services: dict[str, str], http_sink: Any, smtp_server: Any
) -> None:
    _, mailbox = smtp_server
    notifiers = notifiers_from_env()

    def check(now: datetime) -> list[Any]:
        return run_budget_checks(engine, notifiers, now=now, tz=TAIPEI, lang="en")

    # Given batch at 60% of its $1, and copilot (no budget) spending $5
    _spend(engine, "batch", "0.60", DAY)
    _spend(engine, "copilot", "5", DAY)
    # When the checks run, and run again
    sent = check(DAY)
    again = check(DAY + timedelta(minutes=5))
    # Then one warning about batch, on the pool's channels and to batch's owner; nothing more
    assert [(s.rule, s.service, s.threshold, s.state) for s in sent] == [
        ("service_budget", "batch", "50%", "firing")
    ]
    assert sent[0].channels == {"log": "ok", "webhook": "ok", "email": "ok", "owner:webhook": "ok"}
    assert again == []
    (owner,) = http_sink.bodies("/batch-owner")
    alert = owner["alerts"][0]
    assert alert["labels"]["alertname"] == "AipoolServiceBudgetWarning"
    assert alert["labels"]["service"] == "batch"
    assert alert["annotations"]["summary"] == (
        "Service Nightly summaries's monthly cost reached $0.50 (50% of its budget)"
    )
    assert [m["To"] for m in mailbox.messages] == ["ops@example.test"]

    # When batch passes its whole budget, and triage half of its own
    _spend(engine, "batch", "0.45", DAY + timedelta(minutes=10))
    _spend(engine, "triage", "0.55", DAY + timedelta(minutes=10))
    sent = check(DAY + timedelta(minutes=10))
    # Then batch's 100% and triage's 50% are sent once each, triage's to its owner by e-mail
    assert sorted((s.service, s.threshold) for s in sent) == [("batch", "100%"), ("triage", "50%")]
    assert len(http_sink.bodies("/batch-owner")) == 2
    assert sorted(m["To"] for m in mailbox.messages) == [
        "ops@example.test",
        "ops@example.test",
        "ops@example.test",
        "triage-lead@example.test",
    ]
    assert check(DAY + timedelta(minutes=15)) == []

    # When the month ends
    ended = check(datetime(2026, 4, 1, 0, 1, tzinfo=TAIPEI))
    # Then each of the month's service alerts is resolved once, and the owners are told
    assert sorted((s.service, s.threshold, s.state) for s in ended) == [
        ("batch", "100%", "resolved"),
        ("batch", "50%", "resolved"),
        ("triage", "50%", "resolved"),
    ]
    with engine.connect() as conn:
        journal = conn.execute(select(AlertEvent.service, AlertEvent.state)).all()
    assert {service for service, _ in journal} == {"batch", "triage"}


def test_given_two_services_at_the_same_threshold_then_each_has_its_own_alert(
    engine: Engine, services: dict[str, str]
) -> None:
    # Given batch and triage both past half their budgets in the same month
    _spend(engine, "batch", "0.70", DAY)
    _spend(engine, "triage", "0.51", DAY)
    # When checked
    sent = run_budget_checks(engine, [], now=DAY, tz=TAIPEI, lang="en")
    # Then one warning each: the journal's key tells the services apart
    assert sorted((s.service, s.threshold) for s in sent) == [("batch", "50%"), ("triage", "50%")]


def test_given_a_service_near_its_share_of_gemini_then_its_owner_is_warned_once_per_threshold(
    engine: Engine, services: dict[str, str], http_sink: Any, tmp_path: Path, monkeypatch
) -> None:
    # Given batch may use 10% of Gemini's 20,000 daily tokens (2,000), its owner a webhook
    routes = Path(services["AIPOOL_ROUTES_FILE"])
    routes.write_text(
        routes.read_text(encoding="utf-8")
        + "\n[services.batch.shares.gemini]\ndaily_tokens = 0.1\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("AIPOOL_GEMINI_DAILY_TOKENS", "20000")

    def check(now: datetime) -> list[Any]:
        return run_budget_checks(engine, [], now=now, tz=TAIPEI, lang="en")

    # When batch used 1,500 of its 2,000 tokens (75%), and the checks run twice
    for _ in range(15):
        _spend(engine, "batch", "0", DAY)
    sent = check(DAY) + check(DAY + timedelta(minutes=5))
    # Then one warning about batch's share of Gemini, to its owner too, named as Prometheus names it
    assert [(s.rule, s.service, s.provider, s.threshold) for s in sent] == [
        ("service_daily_tokens", "batch", "gemini", "70%")
    ]
    alert = http_sink.bodies("/batch-owner")[0]["alerts"][0]
    assert alert["labels"]["alertname"] == "AipoolServiceShareWarning"
    assert alert["annotations"]["summary"] == (
        "Service Nightly summaries's share of Gemini daily tokens reached 70%"
    )
    # When it passes 90% (1,900), then the day ends
    for _ in range(4):
        _spend(engine, "batch", "0", DAY + timedelta(minutes=10))
    crossed = check(DAY + timedelta(minutes=10))
    ended = check(datetime(2026, 3, 15, 0, 1, tzinfo=TAIPEI))
    # Then one critical, and both resolved with the day
    assert [(s.threshold, s.state) for s in crossed] == [("90%", "firing")]
    assert sorted((s.threshold, s.state) for s in ended) == [
        ("70%", "resolved"),
        ("90%", "resolved"),
    ]
