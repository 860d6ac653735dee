"""Observers of breaker transitions: a logging listener, and safe delivery to all of them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from aipool.breaker.state import BreakerState, BreakerTransition

#: A listener is any callable taking the event; what it returns is ignored.
Listener = Callable[[BreakerTransition], object]

logger = logging.getLogger("aipool.breaker")


def log_transition(event: BreakerTransition) -> None:
    """Log a transition on ``aipool.breaker``: WARNING when a breaker opens and when it closes
    again (the recovery, which an operator watching an outage at the worker's default WARNING
    level must see as well as the failure), INFO for the half-open trial in between."""
    level = logging.INFO if event.new is BreakerState.HALF_OPEN else logging.WARNING
    logger.log(
        level,
        "breaker %s: %s -> %s (%s)",
        event.provider,
        event.old.value,
        event.new.value,
        event.reason,
    )


def notify(listeners: Iterable[Listener], event: BreakerTransition) -> None:
    """Deliver ``event`` to every listener; one that raises is logged and skipped.

    The transition has already happened in Redis, so an observer's failure must not fail the call
    that caused it, nor keep the event from the other observers.
    """
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            logger.exception("breaker listener %r failed on %s", listener, event)
