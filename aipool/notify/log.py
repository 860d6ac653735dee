"""The log channel: always on, so an alert is never lost even when every other channel fails."""

from __future__ import annotations

import logging

from aipool.notify.base import Notification

log = logging.getLogger("aipool.alerts")


class LogNotifier:
    """Writes the notification to the ``aipool.alerts`` logger: WARNING for an alert firing or
    resolving (its end is news as much as its start), INFO for reports."""

    name = "log"

    def send(self, notification: Notification) -> None:
        """Log ``notification``; never raises."""
        level = logging.WARNING if notification.severity != "info" else logging.INFO
        log.log(
            level,
            "[%s/%s] %s %s",
            notification.status,
            notification.severity,
            notification.summary,
            notification.description,
            extra={"labels": notification.labels},
        )
