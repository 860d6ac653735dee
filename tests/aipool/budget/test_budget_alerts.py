"""Budget alerts end to end: ledger rows in, one message per threshold per period out."""

from __future__ import annotations

import json
import socket
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, func, select

from aipool.budget import (
    notify_breaker_closed,
    notify_breaker_opened,
    notify_model_missing,
    notify_provider_not_found,
    run_budget_checks,
)
from aipool.ledger.models import AlertEvent, usage_logs
from aipool.ledger.record import UsageRecord
from aipool.ledger.rollup import rollup_day
from aipool.ledger.usage_log import _row
from aipool.notify import notifiers_from_env

TAIPEI = ZoneInfo("Asia/Taipei")
GEMINI_DAILY = 100_000  # ADR-006 default, pinned below


@pytest.fixture(autouse=True)
def _adr_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "AIPOOL_LIMITS_FILE",
        "AIPOOL_GEMINI_DAILY_TOKENS",
        "AIPOOL_MONTHLY_BUDGET_USD",
        "AIPOOL_ALERTS",
    ):
        monkeypatch.delenv(name, raising=False)
    # The settings follow the environment: no cache to clear.
    monkeypatch.setenv("AIPOOL_GEMINI_DAILY_TOKENS", str(GEMINI_DAILY))


def _refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/dead"  # closed again: connections are refused


class Ledger:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.n = 0

    def use(self, provider: str, tokens: int, at: datetime, times: int = 1, **kw: Any) -> None:
        rows = []
        for _ in range(times):
            self.n += 1
            rec = UsageRecord(
                f"r{self.n}",
                0,
                provider,
                "m",
                kw.get("outcome", "ok"),
                kw.get("success", True),
                input_tokens=tokens,
                created_at=at,
                **{k: v for k, v in kw.items() if k not in ("outcome", "success")},
            )
            rows.append(_row(rec))
        with self.engine.begin() as conn:
            conn.execute(usage_logs.insert(), rows)


def _env(http_url: str, smtp_port: int) -> dict[str, str]:
    return {
        "AIPOOL_SLACK_WEBHOOK_URL": f"{http_url}/slack",
        "AIPOOL_ALERT_WEBHOOK_URL": f"{http_url}/hook",
        "AIPOOL_SMTP_HOST": "127.0.0.1",
        "AIPOOL_SMTP_PORT": str(smtp_port),
        "AIPOOL_SMTP_FROM": "aipool@example.test",
        "AIPOOL_SMTP_TO": "ops@example.test",
    }


def test_given_gemini_usage_rising_when_checked_then_one_message_per_threshold_per_day(
    engine: Engine, http_sink: Any, smtp_server: Any
) -> None:
    # Given: every channel pointed at loopback servers
    controller, mailbox = smtp_server
    notifiers = notifiers_from_env(_env(http_sink.url, controller.port))
    ledger = Ledger(engine)
    day1 = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)

    def check(now: datetime) -> list[Any]:
        return run_budget_checks(engine, notifiers, now=now, tz=TAIPEI, lang="zh-TW")

    # When: usage at 60%, then 71%
    ledger.use("gemini", 60_000, day1)
    assert check(day1) == []
    ledger.use("gemini", 11_000, day1 + timedelta(minutes=5))
    crossed_70 = check(day1 + timedelta(minutes=5))
    # Then: one warning on every channel, in the ADR's words
    assert [(s.rule, s.threshold, s.state) for s in crossed_70] == [
        ("daily_tokens", "70%", "firing")
    ]
    assert crossed_70[0].channels == {"log": "ok", "slack": "ok", "webhook": "ok", "email": "ok"}
    assert http_sink.bodies("/slack")[0]["text"].endswith("Gemini API 每日用量已達 70%")
    hook = http_sink.bodies("/hook")[0]
    assert hook["version"] == "4" and hook["status"] == "firing"
    assert hook["alerts"][0]["labels"]["severity"] == "warning"
    assert hook["alerts"][0]["labels"]["provider"] == "gemini"
    assert hook["alerts"][0]["annotations"]["summary"] == "Gemini API 每日用量已達 70%"
    assert "startsAt" in hook["alerts"][0]
    assert len(mailbox.messages) == 1
    assert "Gemini API" in str(mailbox.messages[0]["Subject"]) or mailbox.messages[0]["Subject"]

    # When: still above 70% on the next runs
    ledger.use("gemini", 5_000, day1 + timedelta(minutes=10))
    assert check(day1 + timedelta(minutes=10)) == []
    assert check(day1 + timedelta(minutes=15)) == []
    # Then: nothing more was sent
    assert len(http_sink.bodies("/slack")) == 1 and len(mailbox.messages) == 1

    # When: crossing 90%
    ledger.use("gemini", 15_000, day1 + timedelta(minutes=20))
    crossed_90 = check(day1 + timedelta(minutes=20))
    assert check(day1 + timedelta(minutes=25)) == []
    # Then: one critical
    assert [(s.threshold, s.state) for s in crossed_90] == [("90%", "firing")]
    assert http_sink.bodies("/hook")[1]["alerts"][0]["labels"]["severity"] == "critical"
    assert "即將觸發限流" in http_sink.bodies("/slack")[1]["text"]
    assert len(mailbox.messages) == 2

    # When: the next local day begins
    day2 = datetime(2026, 3, 15, 0, 0, 1, tzinfo=TAIPEI)
    ended = check(day2)
    # Then: the day's two alerts are resolved, once each, ending when the day ended
    assert [(s.threshold, s.state) for s in ended] == [("70%", "resolved"), ("90%", "resolved")]
    resolved = [b["alerts"][0] for b in http_sink.bodies("/hook")[2:]]
    assert [a["status"] for a in resolved] == ["resolved", "resolved"]
    assert {a["endsAt"] for a in resolved} == {"2026-03-14T16:00:00+00:00"}
    assert all(a["startsAt"] < a["endsAt"] for a in resolved)
    assert "2026-03-14 已結束" in http_sink.bodies("/slack")[2]["blocks"][1]["text"]["text"]
    assert check(day2 + timedelta(minutes=1)) == []
    # When: usage climbs past 70% again
    ledger.use("gemini", 75_000, day2)
    fresh = check(day2 + timedelta(minutes=5))
    # Then: the new day starts fresh
    assert [(s.threshold, s.state) for s in fresh] == [("70%", "firing")]
    with engine.connect() as conn:
        periods = conn.execute(select(AlertEvent.period).order_by(AlertEvent.id)).scalars().all()
    assert periods == ["2026-03-14", "2026-03-14", "2026-03-14", "2026-03-14", "2026-03-15"]


def test_given_a_dead_webhook_when_alerting_then_email_still_arrives(
    engine: Engine, smtp_server: Any
) -> None:
    # Given: the webhook's port refuses connections
    controller, mailbox = smtp_server
    env = _env(_refused_url(), controller.port)
    env.pop("AIPOOL_SLACK_WEBHOOK_URL")
    notifiers = notifiers_from_env(env)
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("gemini", 72_000, now)
    # When
    sent = run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    # Then
    assert sent[0].channels["webhook"].startswith("failed")
    assert sent[0].channels["email"] == "ok"
    assert len(mailbox.messages) == 1
    with engine.connect() as conn:
        stored = conn.execute(select(AlertEvent.channels)).scalar_one()
    assert stored["email"] == "ok" and stored["webhook"].startswith("failed")


def test_given_usage_jumps_past_90_when_checked_then_only_the_critical_is_sent(
    engine: Engine, http_sink: Any
) -> None:
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("gemini", 95_000, now)
    sent = run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    assert [s.threshold for s in sent] == ["90%"]
    assert run_budget_checks(engine, notifiers, now=now + timedelta(minutes=5), tz=TAIPEI) == []
    assert len(http_sink.bodies("/hook")) == 1


def test_given_two_racing_runs_when_checked_then_the_alert_is_sent_once(
    engine: Engine, http_sink: Any
) -> None:
    # Given
    import threading

    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("gemini", 80_000, now)
    results: list[Any] = []
    # When: eight beat runs at once
    threads = [
        threading.Thread(
            target=lambda: results.append(run_budget_checks(engine, notifiers, now=now, tz=TAIPEI))
        )
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then
    assert sum(len(r) for r in results) == 1
    assert len(http_sink.bodies("/hook")) == 1


def test_given_monthly_cost_past_half_budget_when_checked_then_one_warning_in_english(
    engine: Engine, http_sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: $3 on an earlier (rolled-up) day and $2.5 today against the $10 default budget
    monkeypatch.setenv("AIPOOL_ALERT_LANG", "en")
    notifiers = notifiers_from_env({"AIPOOL_SLACK_WEBHOOK_URL": f"{http_sink.url}/slack"})
    ledger = Ledger(engine)
    earlier = datetime(2026, 3, 2, 10, tzinfo=TAIPEI)
    ledger.use("claude", 1000, earlier, cost_usd=Decimal("3.00"))
    rollup_day(engine, earlier.date(), TAIPEI)
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    ledger.use("claude", 1000, now, cost_usd=Decimal("2.50"))
    # When
    sent = run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    again = run_budget_checks(engine, notifiers, now=now + timedelta(hours=1), tz=TAIPEI)
    # Then
    assert [(s.rule, s.provider) for s in sent] == [("monthly_cost", "*")]
    assert again == []
    assert "AI monthly cost reached $5 (50% of budget)" in http_sink.bodies("/slack")[0]["text"]


def test_given_ollama_hops_skipped_or_rejected_when_checked_then_nothing_is_sent(
    engine: Engine, http_sink: Any
) -> None:
    # Given: within five minutes, ten Ollama hops skipped for a passed deadline (Ollama never
    # called) and ten requests Ollama refused as malformed (a healthy Ollama answering 400)
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    ledger = Ledger(engine)
    now = datetime(2026, 3, 14, 10, 0, tzinfo=TAIPEI)
    ledger.use("ollama", 0, now - timedelta(minutes=1), 10, outcome="deadline", success=False)
    ledger.use(
        "ollama",
        0,
        now - timedelta(minutes=2),
        10,
        outcome="error",
        success=False,
        error_message="rejected: ollama HTTP 400",
    )
    # When
    sent = run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    # Then: no "Ollama may be offline": that alert is the Ollama breaker's, which only failures
    # that count against Ollama open
    assert sent == []
    assert http_sink.bodies("/hook") == []


def test_given_the_ollama_breaker_opening_when_notified_then_the_adr_offline_alert_once(
    engine: Engine, http_sink: Any
) -> None:
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    kwargs: dict[str, Any] = {"engine": engine, "notifiers": notifiers}
    assert len(notify_breaker_opened("ollama", failures=3, **kwargs)) == 1
    assert notify_breaker_opened("ollama", failures=3, **kwargs) == []
    (body,) = http_sink.bodies("/hook")
    assert body["alerts"][0]["labels"]["severity"] == "critical"
    assert body["alerts"][0]["annotations"]["summary"] == "Ollama 服務可能已離線"
    assert "已啟動雲端備援" in body["alerts"][0]["annotations"]["description"]


def test_given_gemini_called_350_times_today_when_checked_then_one_daily_requests_warning(
    engine: Engine, http_sink: Any
) -> None:
    # Given: 350 calls that reached Gemini (70% of its 500 a day) and 200 hops that skipped it
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    ledger = Ledger(engine)
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    ledger.use("gemini", 10, now, 349)
    ledger.use("gemini", 0, now, 200, outcome="circuit_open", success=False)
    assert run_budget_checks(engine, notifiers, now=now, tz=TAIPEI) == []
    ledger.use("gemini", 0, now, 1, outcome="error", success=False)
    # When
    sent = run_budget_checks(engine, notifiers, now=now + timedelta(minutes=5), tz=TAIPEI)
    # Then
    assert [(s.rule, s.provider, s.threshold) for s in sent] == [
        ("daily_requests", "gemini", "70%")
    ]
    summary = http_sink.bodies("/hook")[0]["alerts"][0]["annotations"]["summary"]
    assert summary == "Gemini API 每日請求數已達 70%"


def test_given_prometheus_sends_the_alerts_when_checked_then_the_pool_sends_nothing(
    engine: Engine, http_sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: usage past 90% and a breaker opening, with AIPOOL_ALERTS=prometheus
    monkeypatch.setenv("AIPOOL_ALERTS", "prometheus")
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("gemini", 95_000, now)
    # When
    checked = run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    opened = notify_breaker_opened("claude", engine=engine, notifiers=notifiers)
    # Then: Prometheus pages for these; the pool neither sends nor journals them
    assert checked == [] and opened == []
    assert http_sink.bodies("/hook") == []
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(AlertEvent)).scalar_one() == 0


def test_given_a_breaker_opening_when_notified_twice_then_one_alert_and_one_recovery(
    engine: Engine, http_sink: Any
) -> None:
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    kwargs: dict[str, Any] = {"engine": engine, "notifiers": notifiers}
    assert len(notify_breaker_opened("gemini", failures=5, **kwargs)) == 1
    assert notify_breaker_opened("gemini", failures=5, **kwargs) == []
    assert len(notify_breaker_closed("gemini", **kwargs)) == 1
    assert notify_breaker_closed("gemini", **kwargs) == []
    bodies = http_sink.bodies("/hook")
    assert bodies[0]["alerts"][0]["annotations"]["summary"] == "Gemini 熔斷器已開啟"
    assert [b["status"] for b in bodies] == ["firing", "resolved"]
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(AlertEvent)).scalar_one() == 2


def test_given_the_database_is_unreachable_when_a_breaker_opens_then_nothing_raises() -> None:
    from aipool.ledger.db import make_engine

    down = make_engine(
        "postgresql+psycopg://postgres@127.0.0.1:1/x", connect_args={"connect_timeout": 1}
    )
    assert notify_breaker_opened("claude", engine=down, notifiers=[]) == []
    down.dispose()


def test_given_a_budget_below_a_cent_when_it_is_crossed_then_the_message_shows_the_amounts(
    engine: Engine, http_sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a budget of $0.002 (a demo's) and $0.0012 spent today
    monkeypatch.setenv("AIPOOL_ALERT_LANG", "en")
    monkeypatch.setenv("AIPOOL_MONTHLY_BUDGET_USD", "0.002")
    notifiers = notifiers_from_env({"AIPOOL_SLACK_WEBHOOK_URL": f"{http_sink.url}/slack"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("claude", 1000, now, cost_usd=Decimal("0.0012"))
    # When
    run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    # Then the amounts read as amounts, not "$0" and "$0.00"
    body = json.dumps(http_sink.bodies("/slack")[0], ensure_ascii=False)
    assert "AI monthly cost reached $0.001 (50% of budget)" in body
    assert "Cost this month $0.0012, monthly budget $0.002" in body


def test_given_pool_alerts_when_sent_then_their_alertname_is_the_one_prometheus_fires(
    engine: Engine, http_sink: Any
) -> None:
    # Given the generic webhook (Alertmanager's body) as the only channel
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    ledger = Ledger(engine)
    day = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    # When Gemini's daily tokens pass 70%, Gemini is called 350 times (70% of its daily
    # requests), the month's cost passes half the budget, and Ollama's and Claude's breakers open
    ledger.use("gemini", 200, day, times=350)
    ledger.use("claude", 1_000, day, cost_usd=Decimal("6"))
    run_budget_checks(engine, notifiers, now=day, tz=TAIPEI, lang="zh-TW")
    notify_breaker_opened("ollama", failures=3, engine=engine, notifiers=notifiers, now=day)
    notify_breaker_opened("claude", failures=5, engine=engine, notifiers=notifiers, now=day)
    # Then each alert is labelled with the name the Prometheus rules give the same condition:
    # ADR-006's where it names one, the generic one elsewhere
    names = {
        (a["labels"]["rule"], a["labels"]["provider"]): a["labels"]["alertname"]
        for body in http_sink.bodies("/hook")
        for a in body["alerts"]
    }
    assert names == {
        ("daily_tokens", "gemini"): "GeminiDailyUsageWarning",
        ("daily_requests", "gemini"): "AipoolQuotaWarning",
        ("monthly_cost", "*"): "MonthlyAIBudgetWarning",
        ("breaker_open", "ollama"): "OllamaConsecutiveFailures",
        ("breaker_open", "claude"): "AipoolBreakerOpen",
    }
    assert {b["groupLabels"]["alertname"] for b in http_sink.bodies("/hook")} == set(names.values())


def test_given_the_month_at_103_percent_when_checked_then_the_100_percent_alert_says_so(
    engine: Engine, http_sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: a $0.002 budget and $0.00206 spent (103%), crossing 50% and 100% in one run
    monkeypatch.setenv("AIPOOL_MONTHLY_BUDGET_USD", "0.002")
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("claude", 1000, now, cost_usd=Decimal("0.00206"))
    # When
    sent = run_budget_checks(engine, notifiers, now=now, tz=TAIPEI, lang="zh-TW")
    # Then: one critical message at 100%, saying where the month is; 50% is not sent
    assert [(s.rule, s.threshold) for s in sent] == [("monthly_cost", "100%")]
    (alert,) = [b["alerts"][0] for b in http_sink.bodies("/hook")]
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["summary"] == "AI 月度成本已達 $0.002 (預算 100%)"
    assert "（預算的 103%）" in alert["annotations"]["description"]
    assert "50%" not in alert["annotations"]["summary"]


def test_given_a_condition_that_holds_again_after_its_resolution_then_it_is_sent_again(
    engine: Engine, http_sink: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given: $6 spent against the $10 budget: the 50% warning fires
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    Ledger(engine).use("claude", 1000, now, cost_usd=Decimal("6"))
    run_budget_checks(engine, notifiers, now=now, tz=TAIPEI)
    # When: the budget is raised to $20 (resolved), then set back to $10 in the same month
    monkeypatch.setenv("AIPOOL_MONTHLY_BUDGET_USD", "20")
    run_budget_checks(engine, notifiers, now=now + timedelta(minutes=5), tz=TAIPEI)
    monkeypatch.setenv("AIPOOL_MONTHLY_BUDGET_USD", "10")
    again = run_budget_checks(engine, notifiers, now=now + timedelta(minutes=10), tz=TAIPEI)
    # Then: the second crossing is sent too: firing, resolved, firing, each once
    assert [(s.threshold, s.state) for s in again] == [("50%", "firing")]
    alerts = [b["alerts"][0] for b in http_sink.bodies("/hook")]
    assert [a["status"] for a in alerts] == ["firing", "resolved", "firing"]
    assert alerts[1]["endsAt"] != "0001-01-01T00:00:00Z"
    with engine.connect() as conn:
        episodes = conn.execute(
            select(AlertEvent.episode, AlertEvent.state).order_by(AlertEvent.id)
        ).all()
    assert [tuple(e) for e in episodes] == [(1, "firing"), (1, "resolved"), (2, "firing")]


def test_given_a_missing_model_when_notified_then_one_alert_a_day_naming_it(
    engine: Engine, http_sink: Any
) -> None:
    # Given: Ollama answering "model not found" for the route table's model, many times
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    kwargs: dict[str, Any] = {"engine": engine, "notifiers": notifiers, "lang": "en"}
    # When the workers report it again and again that day
    first = notify_model_missing("ollama", "llama3.2:3b", now=now, **kwargs)
    again = notify_model_missing("ollama", "llama3.2:3b", now=now + timedelta(hours=2), **kwargs)
    # Then one critical alert under its own name, naming the model
    assert [(s.rule, s.provider, s.state) for s in first] == [("model_missing", "ollama", "firing")]
    assert again == []
    (body,) = http_sink.bodies("/hook")
    (alert,) = body["alerts"]
    assert alert["labels"]["alertname"] == "AipoolModelMissing"
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["summary"] == "Ollama does not have model llama3.2:3b"
    # And the day's end resolves it, even where Prometheus sends the budget alerts
    ended = run_budget_checks(
        engine, notifiers, now=datetime(2026, 3, 15, 0, 1, tzinfo=TAIPEI), tz=TAIPEI
    )
    assert [(s.rule, s.state) for s in ended] == [("model_missing", "resolved")]


@pytest.mark.parametrize(
    ("notify", "args", "rule", "summary", "said"),
    [
        pytest.param(
            notify_model_missing,
            ("gemini", "gemini-2.5-flush"),
            "model_missing",
            "Gemini 找不到模型 gemini-2.5-flush",
            "請拉取該模型或修正路由表",
            id="missing-model",
        ),
        pytest.param(
            notify_provider_not_found,
            ("claude", "gateway.example"),
            "not_found",
            "Claude 的網址不存在：gateway.example 不提供 Claude API",
            "請檢查 ANTHROPIC_BASE_URL",
            id="url-not-found",
        ),
    ],
)
def test_given_prometheus_sends_the_budget_alerts_then_the_pool_still_sends_its_own(
    engine: Engine,
    http_sink: Any,
    monkeypatch: pytest.MonkeyPatch,
    notify: Any,
    args: tuple[str, str],
    rule: str,
    summary: str,
    said: str,
) -> None:
    monkeypatch.setenv("AIPOOL_ALERTS", "prometheus")
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    sent = notify(*args, engine=engine, notifiers=notifiers, lang="zh-TW")
    assert len(sent) == 1
    (body,) = http_sink.bodies("/hook")
    assert body["alerts"][0]["annotations"]["summary"] == summary
    assert said in body["alerts"][0]["annotations"]["description"]
    # and the day's end still resolves it, though the pool evaluates no budget
    tomorrow = datetime.now(TAIPEI) + timedelta(days=1)
    ended = run_budget_checks(engine, notifiers, now=tomorrow, tz=TAIPEI)
    assert [(s.rule, s.state) for s in ended] == [(rule, "resolved")]


def test_given_a_providers_url_not_found_when_notified_then_one_alert_a_day_naming_its_host(
    engine: Engine, http_sink: Any
) -> None:
    # Given: Ollama's base URL answering 404 naming no model (or 405), many times
    notifiers = notifiers_from_env({"AIPOOL_ALERT_WEBHOOK_URL": f"{http_sink.url}/hook"})
    now = datetime(2026, 3, 14, 10, tzinfo=TAIPEI)
    kwargs: dict[str, Any] = {"engine": engine, "notifiers": notifiers, "lang": "en"}
    # When the workers report it again and again that day
    first = notify_provider_not_found("ollama", "gpu-box:11434", now=now, **kwargs)
    again = notify_provider_not_found(
        "ollama", "gpu-box:11434", now=now + timedelta(hours=2), **kwargs
    )
    # Then one critical alert under its own name
    assert [(s.rule, s.provider, s.state) for s in first] == [("not_found", "ollama", "firing")]
    assert again == []
    (body,) = http_sink.bodies("/hook")
    (alert,) = body["alerts"]
    assert alert["labels"]["alertname"] == "AipoolProviderNotFound"
    assert alert["labels"]["severity"] == "critical"
    assert alert["labels"]["provider"] == "ollama"
    # naming the provider, the URL's host and the setting to check
    summary, description = alert["annotations"]["summary"], alert["annotations"]["description"]
    assert summary == "Ollama's URL not found: gpu-box:11434 does not serve the Ollama API"
    assert "gpu-box:11434" in description and "check OLLAMA_BASE_URL" in description
    # And a second provider's URL is an alert of its own that day
    other = notify_provider_not_found("nemotron", "proxy.internal", now=now, **kwargs)
    assert [(s.provider, s.state) for s in other] == [("nemotron", "firing")]
    assert (
        "NVIDIA_BASE_URL"
        in http_sink.bodies("/hook")[-1]["alerts"][0]["annotations"]["description"]
    )
    # And the day's end resolves both, even where Prometheus sends the budget alerts; the next
    # day's failure pages again
    ended = run_budget_checks(
        engine, notifiers, now=datetime(2026, 3, 15, 0, 1, tzinfo=TAIPEI), tz=TAIPEI
    )
    assert sorted((s.rule, s.provider, s.state) for s in ended) == [
        ("not_found", "nemotron", "resolved"),
        ("not_found", "ollama", "resolved"),
    ]
    tomorrow = notify_provider_not_found(
        "ollama", "gpu-box:11434", now=datetime(2026, 3, 15, 9, tzinfo=TAIPEI), **kwargs
    )
    assert [(s.rule, s.state) for s in tomorrow] == [("not_found", "firing")]
