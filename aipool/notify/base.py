"""The notification and the one interface every channel implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol


@dataclass(frozen=True)
class Notification:
    """One message for people: an alert firing or resolved, or a report.

    ``labels`` identify the alert (rule, provider, severity...); ``summary`` is the one-line
    title and ``description`` the detail. Text only: callers put no secrets and no prompt text
    here, and nothing here is ever a credential.
    """

    summary: str
    description: str = ""
    severity: str = "info"
    status: str = "firing"
    labels: dict[str, str] = field(default_factory=dict)
    starts_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    ends_at: datetime | None = None
    #: Preformatted body for channels that show monospace text (the daily report).
    body: str | None = None


class Notifier(Protocol):
    """A channel. ``send`` delivers or raises; it need not retry (``dispatch`` does)."""

    name: str

    def send(self, notification: Notification) -> None:
        """Deliver ``notification`` or raise."""
        ...
