"""Listening to a pool's events as Flower does."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def heard_events(app: Any) -> Iterator[list[dict[str, Any]]]:
    """Every event sent on ``app``'s broker while the block runs, in the order heard."""
    events: list[dict[str, Any]] = []
    with app.connection() as connection:
        receiver = app.events.Receiver(connection, handlers={"*": events.append})
        listening = threading.Thread(target=receiver.capture, kwargs={"limit": None})
        listening.start()
        try:
            yield events
        finally:
            receiver.should_stop = True
            listening.join(timeout=10)
