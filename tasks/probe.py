"""``ai.ping``: a task that does nothing, for health checks through the broker and as a baseline."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="ai.ping")
def ping() -> str:
    """Return ``"pong"``; proves a worker consumes the queue it was sent to."""
    return "pong"
