"""Fan-out with retries: every channel is tried at the same time, none can block another."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from aipool.notify.base import Notification, Notifier
from aipool.scrub import scrub

log = logging.getLogger(__name__)

#: Attempts per channel and the pause before each retry (seconds); short, because a beat task
#: waits for the slowest channel.
ATTEMPTS = 3
BACKOFF = (0.2, 0.5)


def _deliver(notifier: Notifier, notification: Notification, attempts: int) -> str:
    error = ""
    for attempt in range(attempts):
        try:
            notifier.send(notification)
            return "ok"
        except Exception as exc:  # any channel error is reported, never raised to the caller
            # The exception text may echo a webhook URL (Slack's carries its secret): keep the type.
            error = type(exc).__name__
            log.warning("notifier %s failed (attempt %d): %s", notifier.name, attempt + 1, error)
            if attempt + 1 < attempts:
                time.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
    return f"failed: {error}"


def scrubbed(notification: Notification) -> Notification:
    """``notification`` with every text scrubbed of credentials, whatever a caller put in it.

    Alerts quote what happened, and what happened may be a provider's error text: every channel
    sends what comes out of here, so none can carry a key.
    """
    return replace(
        notification,
        summary=scrub(notification.summary, None) or "",
        description=scrub(notification.description, None) or "",
        body=scrub(notification.body, None),
        labels={k: scrub(v, None) or "" for k, v in notification.labels.items()},
    )


def dispatch(
    notification: Notification, notifiers: Sequence[Notifier], attempts: int = ATTEMPTS
) -> dict[str, str]:
    """Send ``notification``, scrubbed, through every notifier concurrently.

    Returns ``{channel name: "ok" | "failed: <error type>"}``. Never raises.
    """
    if not notifiers:
        return {}
    notification = scrubbed(notification)
    with ThreadPoolExecutor(max_workers=len(notifiers), thread_name_prefix="notify") as pool:
        futures = {n.name: pool.submit(_deliver, n, notification, attempts) for n in notifiers}
        return {name: future.result() for name, future in futures.items()}
