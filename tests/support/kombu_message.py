"""A kombu message as a worker's consumer receives it, built from a raw body and headers."""

from __future__ import annotations

import uuid
from typing import Any

from kombu.message import Message


def kombu_message(
    body: bytes | str,
    headers: Any = None,
    content_type: str = "application/json",
    encoding: str | None = "utf-8",
    correlation_id: str | None = None,
    queue: str = "gemini",
) -> Message:
    """The message ``body`` with ``headers`` (a fresh ``edge.add`` task's when None) on ``queue``."""
    raw = body.encode() if isinstance(body, str) else body
    if headers is None:
        headers = {"task": "edge.add", "id": str(uuid.uuid4())}
    return Message(
        body=raw,
        content_type=content_type,
        content_encoding=encoding,
        headers=headers,
        properties={"correlation_id": correlation_id},
        delivery_info={"exchange": "", "routing_key": queue},
    )
