"""One hop's view of a request (:class:`Visit`) and the three ways a hop ends.

:class:`Done` (a result for the producer), :class:`Forward` (re-dispatch to a queue, same task id:
the next provider's, or this one's again a little later when another delivery of the same message
owns the call) or :class:`Drop` (the attempt was answered long ago: this delivery writes nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from aipool import lanes
from aipool.attempt.layout import Header
from aipool.attempt.money import micro
from aipool.contract.journey import Journey
from aipool.contract.request import Request
from aipool.contract.vocabulary import Outcome
from aipool.routing.router import routed_priority
from aipool.routing.table import load_table
from aipool.routing.windows import CONTEXT_TOO_LONG, fits


@dataclass(frozen=True)
class Forward:
    """Send the request on to ``queue``; ``journey.position`` names the hop that runs there,
    ``delay_s`` seconds from now (0: at once)."""

    queue: str
    journey: Journey
    delay_s: float = 0.0


@dataclass(frozen=True)
class Done:
    """The producer's final answer."""

    result: dict[str, Any]


@dataclass(frozen=True)
class Drop:
    """This delivery adds nothing: the attempt was answered long ago (its answer is no longer
    kept). The message is acknowledged and no result is written (the producer's result stays)."""

    reason: str


Pricing = Callable[[str, str, int, int], Decimal]
#: The outcome of a hop passed over because the request's time is spent: its deadline, or its
#: message's expiry.
DEADLINE: Outcome = "deadline"


def expired_words(when: str) -> str:
    """What a hop passed over, or a call cut, by the request's message expiry says: ``when`` is
    "before this hop" or "during the call"."""
    return f"the request's message expired {when} (its producer's expires)"


@dataclass
class Visit:
    """One hop's view of a request: what it asks, whose it is, where it has been.

    ``skips``: the hops of its chain it can be known now never to fit (a prompt longer than the
    model's context window), by position, with the code they are passed over with.

    ``expired``: the producer's message expiry (Celery's ``expires``) passed before this hop: no
    provider is called for it any more (each is passed over as for a spent deadline), and the
    chain's end answers, as the producer's ``AsyncResult`` always gets an answer.

    ``expires_at``: when that expiry passes (epoch seconds, read on the pool's clock; ``None``:
    never): a call begun before it is cut at it, as at the deadline.
    """

    request: Request
    request_id: str
    journey: Journey
    pricing: Pricing = field(default=lambda *_: Decimal(0))
    expired: bool = False
    expires_at: float | None = None
    header: Header = field(init=False)
    skips: dict[int, str] = field(init=False)
    #: The hops passed over for their lane's wait: provider → (lane, how long its oldest waited).
    waits: dict[str, tuple[str, float]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        chain = self.journey.route.chain
        table = load_table()  # once for every hop's window and the priority, not once per hop
        self.skips = {
            position: CONTEXT_TOO_LONG
            for position, hop in enumerate(chain)
            if not hop.terminal and not fits(self.request, hop, table)
        }
        if self.expired:
            self.expire()
        estimate = (self.request.estimated_input_tokens(), self.request.max_tokens)
        self.header = Header(
            journey_id=self.journey.id,
            request_id=self.request_id,
            chain=chain,
            deadline_s=self.request.deadline_s,
            tokens=self.request.estimated_total_tokens(),
            received=self.journey.received_at,
            service=self.journey.route.service,
            priority=routed_priority(self.request, table),
            # What a call may cost at each hop: the money rules admit calls by it.
            costs=tuple(
                0 if hop.terminal else micro(self.pricing(hop.provider, hop.model, *estimate))
                for hop in chain
            ),
        )
        #: Whether the request waits in the urgent lanes (:mod:`aipool.lanes`) at every hop.
        self.urgent = lanes.is_urgent(self.request, self.journey.route.intent, self.header.priority)

    def expire(self) -> None:
        """The message's expiry has passed: every provider hop not ruled out already is passed
        over as for a spent deadline, and the chain's end answers."""
        self.expired = True
        for position, hop in enumerate(self.journey.route.chain):
            if not hop.terminal:
                self.skips.setdefault(position, DEADLINE)

    def forward(self, queue: str, delay_s: float = 0.0) -> Forward:
        """Send the request on to ``queue``, in its own lane."""
        return Forward(queue=lanes.lane(queue, self.urgent), journey=self.journey, delay_s=delay_s)
