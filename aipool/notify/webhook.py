"""HTTP channels: a Slack-compatible incoming webhook and a generic Alertmanager-style webhook."""

from __future__ import annotations

from typing import Any

import httpx

from aipool.notify.base import Notification

#: Connect fast, give the receiver a little longer: a notifier must never hang a beat task.
TIMEOUT = httpx.Timeout(5.0, connect=2.0)

_ICON = {"critical": ":rotating_light:", "warning": ":warning:", "info": ":information_source:"}


def _post(url: str, payload: dict[str, Any], timeout: httpx.Timeout) -> None:
    response = httpx.post(url, json=payload, timeout=timeout)
    response.raise_for_status()


class SlackWebhook:
    """Posts ``{"text": ..., "blocks": [...]}`` to a Slack (or Mattermost...) incoming webhook."""

    name = "slack"

    def __init__(self, url: str, timeout: httpx.Timeout = TIMEOUT) -> None:
        self._url = url
        self._timeout = timeout

    def payload(self, n: Notification) -> dict[str, Any]:
        """The JSON body sent for ``n``."""
        icon = ":white_check_mark:" if n.status == "resolved" else _ICON.get(n.severity, "")
        text = f"{icon} {n.summary}".strip()
        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"*{text}*"}}
        ]
        if n.description:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": n.description}})
        if n.body:
            blocks.append(
                {"type": "section", "text": {"type": "mrkdwn", "text": f"```{n.body}```"}}
            )
        if n.labels:
            context = " · ".join(f"{k}: {v}" for k, v in sorted(n.labels.items()))
            blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]})
        return {"text": text, "blocks": blocks}

    def send(self, notification: Notification) -> None:
        """POST the payload; raise on a transport error or a non-2xx answer."""
        _post(self._url, self.payload(notification), self._timeout)


class AlertWebhook:
    """Posts an Alertmanager-style body (``version`` 4) to a generic JSON webhook."""

    name = "webhook"

    def __init__(self, url: str, timeout: httpx.Timeout = TIMEOUT) -> None:
        self._url = url
        self._timeout = timeout

    def payload(self, n: Notification) -> dict[str, Any]:
        """The JSON body sent for ``n``."""
        labels = {"severity": n.severity, **n.labels}
        annotations = {"summary": n.summary}
        if n.description:
            annotations["description"] = n.description
        if n.body:
            annotations["report"] = n.body
        alert: dict[str, Any] = {
            "status": n.status,
            "labels": labels,
            "annotations": annotations,
            "startsAt": n.starts_at.isoformat(),
            "endsAt": n.ends_at.isoformat() if n.ends_at else "0001-01-01T00:00:00Z",
        }
        return {
            "version": "4",
            "receiver": "aipool",
            "status": n.status,
            "groupLabels": {"alertname": labels.get("alertname", labels.get("rule", "aipool"))},
            "commonLabels": labels,
            "commonAnnotations": annotations,
            "alerts": [alert],
        }

    def send(self, notification: Notification) -> None:
        """POST the payload; raise on a transport error or a non-2xx answer."""
        _post(self._url, self.payload(notification), self._timeout)
