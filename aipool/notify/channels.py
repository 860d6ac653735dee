"""Channels configured by the settings; any number may be active at once.

- ``AIPOOL_SLACK_WEBHOOK_URL``: Slack-compatible incoming webhook.
- ``AIPOOL_ALERT_WEBHOOK_URL``: generic JSON webhook (Alertmanager-style body).
- ``AIPOOL_SMTP_HOST``, ``AIPOOL_SMTP_PORT`` (25), ``AIPOOL_SMTP_FROM``, ``AIPOOL_SMTP_TO``
  (comma-separated), optional ``AIPOOL_SMTP_USER``/``AIPOOL_SMTP_PASSWORD``,
  ``AIPOOL_SMTP_STARTTLS`` (``true``/``false``): e-mail.
- The log channel is always on.

The webhook URLs and the SMTP password are secrets: each may also come from ``<NAME>_FILE`` or
a mounted secret (:mod:`aipool.secrets`).
"""

from __future__ import annotations

from collections.abc import Mapping

from aipool.notify.base import Notifier
from aipool.notify.log import LogNotifier
from aipool.notify.mail import EmailNotifier
from aipool.notify.webhook import AlertWebhook, SlackWebhook
from aipool.settings import read_settings, settings
from aipool.settings.model import AlertSettings


def notifiers_for(alerts: AlertSettings) -> list[Notifier]:
    """The channels ``alerts`` configures, the log channel first."""
    result: list[Notifier] = [LogNotifier()]
    if alerts.slack_webhook_url is not None:
        result.append(SlackWebhook(alerts.slack_webhook_url.get_secret_value()))
    if alerts.webhook_url is not None:
        result.append(AlertWebhook(alerts.webhook_url.get_secret_value()))
    if alerts.smtp_host and alerts.smtp_to:
        result.append(email_to(alerts, list(alerts.smtp_to)))
    return result


def email_to(alerts: AlertSettings, recipients: list[str]) -> EmailNotifier:
    """E-mail to ``recipients`` through the SMTP server ``alerts`` configures (its host set)."""
    if not alerts.smtp_host:
        raise ValueError("e-mail needs an SMTP server: AIPOOL_SMTP_HOST")
    return EmailNotifier(
        alerts.smtp_host,
        alerts.smtp_port,
        alerts.smtp_from,
        recipients,
        user=alerts.smtp_user,
        password=(
            alerts.smtp_password.get_secret_value() if alerts.smtp_password is not None else None
        ),
        starttls=alerts.smtp_starttls,
    )


def notifiers_from_env(env: Mapping[str, str] | None = None) -> list[Notifier]:
    """The channels the settings of ``env`` (default: this process's) configure."""
    current = settings() if env is None else read_settings(env).checked()
    return notifiers_for(current.alerts)
