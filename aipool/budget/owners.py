"""Where a service's budget alerts go besides the pool's channels: to the owner the route table
names for it (``owner = "..."`` under ``[services.<name>]``, issue #24).

An owner is an ``http(s)://`` URL (the generic JSON webhook's body, as
``AIPOOL_ALERT_WEBHOOK_URL`` gets) or an e-mail address (sent through the pool's SMTP server,
``AIPOOL_SMTP_HOST``; without one, the owner cannot be mailed and the log says so). The channel is
named ``owner:webhook`` or ``owner:email`` in the alert journal, apart from the pool's own.
"""

from __future__ import annotations

import logging

from aipool.notify.base import Notification, Notifier
from aipool.notify.channels import email_to
from aipool.notify.webhook import AlertWebhook
from aipool.routing.table import RouteTableError, load_table
from aipool.settings.model import AlertSettings

log = logging.getLogger(__name__)


class OwnerChannel:
    """A channel to one service's owner, named apart from the pool's channels of the same kind."""

    def __init__(self, channel: Notifier) -> None:
        self.channel = channel
        self.name = f"owner:{channel.name}"

    def send(self, notification: Notification) -> None:
        self.channel.send(notification)


def owner_notifiers(service: str, alerts: AlertSettings) -> list[Notifier]:
    """The channel to ``service``'s owner, if the route table in force names one it can reach."""

    if service == "*":
        return []
    try:
        declared = load_table().services.get(service)
    except RouteTableError:  # the table is unreadable: the pool's channels still get the alert
        return []
    owner = declared.owner if declared is not None else None
    if not owner:
        return []
    if owner.startswith(("http://", "https://")):
        return [OwnerChannel(AlertWebhook(owner))]
    if "@" in owner and alerts.smtp_host:
        return [OwnerChannel(email_to(alerts, [owner]))]
    log.warning(
        "service %s: its owner cannot be reached (an e-mail address needs AIPOOL_SMTP_HOST; "
        "else give an http(s) webhook URL); the alert goes to the pool's channels only",
        service,
    )
    return []
