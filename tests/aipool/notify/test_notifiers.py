"""Notifiers: payload shapes, configuration from env, retries that never block the others."""

from __future__ import annotations

from typing import Any

from aipool.notify import Notification, dispatch, notifiers_from_env
from aipool.notify.mail import EmailNotifier
from aipool.notify.webhook import AlertWebhook, SlackWebhook

ALERT = Notification(
    summary="Gemini API 每日用量已達 70%",
    description="今日 Gemini 已使用 71,000 tokens",
    severity="warning",
    labels={"rule": "daily_tokens", "provider": "gemini"},
)


def test_given_an_alert_when_shaped_for_slack_then_text_and_blocks() -> None:
    body = SlackWebhook("http://127.0.0.1:9/x").payload(ALERT)
    assert body["text"] == ":warning: Gemini API 每日用量已達 70%"
    assert body["blocks"][0]["type"] == "section"
    assert "provider: gemini" in body["blocks"][-1]["elements"][0]["text"]


def test_given_an_alert_when_shaped_for_the_webhook_then_alertmanager_v4() -> None:
    body = AlertWebhook("http://127.0.0.1:9/x").payload(ALERT)
    assert body["version"] == "4" and body["status"] == "firing"
    alert = body["alerts"][0]
    assert alert["labels"] == {"severity": "warning", "rule": "daily_tokens", "provider": "gemini"}
    assert alert["annotations"]["summary"] == ALERT.summary
    assert alert["startsAt"].endswith("+00:00")


def test_given_an_alert_when_shaped_as_mail_then_subject_has_severity() -> None:
    msg = EmailNotifier("127.0.0.1", 25, "a@x.test", ["b@x.test"]).message(ALERT)
    assert msg["Subject"] == "[WARNING] Gemini API 每日用量已達 70%"
    assert "71,000" in msg.get_content()


def test_given_env_when_configured_then_every_named_channel_is_active() -> None:
    names = [
        n.name
        for n in notifiers_from_env(
            {
                "AIPOOL_SLACK_WEBHOOK_URL": "http://127.0.0.1:1/s",
                "AIPOOL_ALERT_WEBHOOK_URL": "http://127.0.0.1:1/w",
                "AIPOOL_SMTP_HOST": "127.0.0.1",
                "AIPOOL_SMTP_TO": "ops@x.test",
            }
        )
    ]
    assert names == ["log", "slack", "webhook", "email"]
    assert [n.name for n in notifiers_from_env({})] == ["log"]


class _Flaky:
    name = "flaky"

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def send(self, notification: Notification) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("https://hooks.slack.test/services/T000/B000/SECRETSECRET")


def test_given_a_flaky_channel_when_dispatched_then_it_is_retried_until_it_works() -> None:
    flaky = _Flaky(failures=2)
    assert dispatch(ALERT, [flaky]) == {"flaky": "ok"}
    assert flaky.calls == 3


def test_given_a_broken_channel_when_dispatched_then_others_deliver_and_no_secret_leaks() -> None:
    import threading

    # Given a broken channel, and two that each deliver only once the other has started: they
    # meet at a barrier, which a one-after-the-other dispatch would never reach
    meeting = threading.Barrier(2)
    delivered: list[Any] = []

    class _Meets:
        def __init__(self, name: str) -> None:
            self.name = name

        def send(self, n: Notification) -> None:
            meeting.wait(timeout=30)
            delivered.append(n)

    # When
    result = dispatch(ALERT, [_Flaky(failures=99), _Meets("slow"), _Meets("sink")], attempts=1)
    # Then: channels run side by side; the failure is named by type, not by its message
    assert result == {"flaky": "failed: ConnectionError", "slow": "ok", "sink": "ok"}
    assert len(delivered) == 2
    assert "SECRET" not in str(result)


def test_given_an_alert_when_it_resolves_then_the_log_channel_warns_as_when_it_fired(
    caplog: Any,
) -> None:
    import logging
    from dataclasses import replace

    from aipool.notify.log import LogNotifier

    # When an alert fires, then resolves, and a report is sent
    with caplog.at_level(logging.INFO, logger="aipool.alerts"):
        LogNotifier().send(ALERT)
        LogNotifier().send(replace(ALERT, status="resolved", summary="已恢復：" + ALERT.summary))
        LogNotifier().send(replace(ALERT, severity="info", summary="daily report"))
    # Then the end of the alert is a warning too (a worker's default level shows it); the report
    # is information
    assert [(r.levelname, r.getMessage().split("] ")[0]) for r in caplog.records] == [
        ("WARNING", "[firing/warning"),
        ("WARNING", "[resolved/warning"),
        ("INFO", "[firing/info"),
    ]
