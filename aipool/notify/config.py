"""Channels configured from the environment; any number may be active at once.

- ``AIPOOL_SLACK_WEBHOOK_URL``: Slack-compatible incoming webhook.
- ``AIPOOL_ALERT_WEBHOOK_URL``: generic JSON webhook (Alertmanager-style body).
- ``AIPOOL_SMTP_HOST``, ``AIPOOL_SMTP_PORT`` (25), ``AIPOOL_SMTP_FROM``, ``AIPOOL_SMTP_TO``
  (comma-separated), optional ``AIPOOL_SMTP_USER``/``AIPOOL_SMTP_PASSWORD``,
  ``AIPOOL_SMTP_STARTTLS`` (``1``/``true``): e-mail.
- The log channel is always on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from aipool.notify.base import Notifier
from aipool.notify.log import LogNotifier
from aipool.notify.mail import EmailNotifier
from aipool.notify.webhook import AlertWebhook, SlackWebhook


def notifiers_from_env(env: Mapping[str, str] | None = None) -> list[Notifier]:
    """The channels the environment configures, the log channel first."""
    source: Mapping[str, str] = os.environ if env is None else env
    result: list[Notifier] = [LogNotifier()]
    if url := source.get("AIPOOL_SLACK_WEBHOOK_URL", "").strip():
        result.append(SlackWebhook(url))
    if url := source.get("AIPOOL_ALERT_WEBHOOK_URL", "").strip():
        result.append(AlertWebhook(url))
    host = source.get("AIPOOL_SMTP_HOST", "").strip()
    recipients = [a.strip() for a in source.get("AIPOOL_SMTP_TO", "").split(",") if a.strip()]
    if host and recipients:
        result.append(
            EmailNotifier(
                host,
                int(source.get("AIPOOL_SMTP_PORT", "25")),
                source.get("AIPOOL_SMTP_FROM", "aipool@localhost"),
                recipients,
                user=source.get("AIPOOL_SMTP_USER") or None,
                password=source.get("AIPOOL_SMTP_PASSWORD") or None,
                starttls=source.get("AIPOOL_SMTP_STARTTLS", "").lower() in ("1", "true", "yes"),
            )
        )
    return result
