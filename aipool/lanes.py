"""Lanes: which queue a request waits in, so urgent work never waits behind a backlog.

Every pool queue has two lanes, each a plain Redis list (or RabbitMQ queue) that KEDA scales on by
length: the routine lane, named after the queue (``router``, ``ollama``, ``gemini``...), and the
urgent lane, the same name with ``.urgent`` (``router.urgent``, ``ollama.urgent``...). Queue
priorities stay off (``priority_steps: [0]``): a lane is a queue of its own, consumed by processes
of its own, so urgent work never shares a line with routine work.

A request is **urgent** when its route says so, whoever sent it:

==========================  ===============================================================
signal                      why
==========================  ===============================================================
intent ``ALERT_TRIAGE``     an incident is on: the answer is needed while it lasts
priority ``critical``       ADR-006 §8 (held to its service's ceiling, as routing holds it)
``deadline_s`` ≤ 60         the producer asked for an answer within a minute
==========================  ===============================================================

Who may send where: a producer sending by name uses ``router`` or ``router.urgent`` (the router
puts the request in its own lane from then on, whichever it arrived on, so a routine request sent
to ``router.urgent`` only skips the router's line). The provider lanes are the pool's own:
``submit()`` and the workers' forwards choose them from the request, and a worker refuses
(``invalid_journey``) a routine request that arrives on an urgent provider lane, as it refuses a
hop on another provider's queue (issue #21's queue binding).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aipool.providers.catalog import PROVIDERS

if TYPE_CHECKING:
    from aipool.contract.request import Request

ROUTER = "router"
MAINTENANCE = "maintenance"
#: The suffix of an urgent lane.
URGENT_SUFFIX = ".urgent"
#: A request with a deadline at most this long is urgent.
URGENT_DEADLINE_S = 60.0
#: The intent that is urgent by nature.
URGENT_INTENTS = frozenset({"ALERT_TRIAGE"})
#: The priority that is urgent by nature.
URGENT_PRIORITIES = frozenset({"critical"})

#: The queues ``ai.generate`` travels: routing, then one per provider.
ROUTINE_LANES = (ROUTER, *PROVIDERS)
URGENT_LANES = tuple(f"{queue}{URGENT_SUFFIX}" for queue in ROUTINE_LANES)
#: Every queue of the pool, lanes and maintenance.
QUEUES = (*ROUTINE_LANES, *URGENT_LANES, MAINTENANCE)


def urgent_lane(queue: str) -> str:
    """The urgent lane of ``queue`` (``ollama`` → ``ollama.urgent``)."""
    return queue if is_urgent_lane(queue) else f"{queue}{URGENT_SUFFIX}"


def is_urgent_lane(queue: str) -> bool:
    """Whether ``queue`` is an urgent lane."""
    return queue.endswith(URGENT_SUFFIX)


def queue_of(lane: str) -> str:
    """The queue a lane belongs to (``ollama.urgent`` → ``ollama``; ``ollama`` → ``ollama``)."""
    return lane[: -len(URGENT_SUFFIX)] if is_urgent_lane(lane) else lane


def is_urgent(request: Request, intent: str, priority: str) -> bool:
    """Whether a request routed to ``intent`` with ``priority`` (its routed priority, held to
    its service's ceiling) takes the urgent lanes."""
    return (
        intent in URGENT_INTENTS
        or priority in URGENT_PRIORITIES
        or (request.deadline_s is not None and request.deadline_s <= URGENT_DEADLINE_S)
    )


def lane(queue: str, urgent: bool) -> str:
    """The lane of ``queue`` a request waits in."""
    return urgent_lane(queue) if urgent else queue_of(queue)


#: The embedded default's worker classes (``aipool worker``, docker compose): one ``celery
#: worker`` per class of queue, each with processes of its own, so a slow local model never holds
#: the processes that routing, the paid providers or urgent work need. Name → (queues, processes).
WORKER_CLASSES: dict[str, tuple[tuple[str, ...], int]] = {
    # Routing takes milliseconds a request; maintenance (drain, roll-ups, alerts) little more.
    "routing": ((ROUTER, MAINTENANCE), 2),
    # What the local servers run in parallel (Ollama's default is 2 or 4 by memory).
    "local": (("ollama", "nemotron"), 2),
    # Paid providers are I/O-bound: their latency must not depend on the local model's.
    "cloud": (("gemini", "claude"), 2),
    # Urgent work has processes of its own, split the same way: an urgent request waiting on a
    # slow local model never holds the one a critical request needs at Claude.
    "urgent": ((urgent_lane(ROUTER), urgent_lane("gemini"), urgent_lane("claude")), 2),
    "urgent-local": ((urgent_lane("ollama"), urgent_lane("nemotron")), 2),
}
