"""Notifiers: where alerts and reports go (Slack, a JSON webhook, e-mail, the log).

Every channel implements ``Notifier.send(notification)`` and raises on failure;
``dispatch()`` fans a notification out to all configured channels at once, retries each a few
times with a short backoff, and never lets one channel's failure reach the others or the caller.
"""

from aipool.notify.base import Notification, Notifier
from aipool.notify.channels import notifiers_from_env
from aipool.notify.dispatch import dispatch

__all__ = ["Notification", "Notifier", "dispatch", "notifiers_from_env"]
