"""One hop's attempt as observers see it: the ledger, the metrics, the log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from aipool.contract.completion import Completion
from aipool.contract.journey import Attempt, Route
from aipool.contract.route import Hop


@dataclass(frozen=True)
class AttemptEvent:
    """Everything observers may know about one hop: no prompt text, no key.

    ``booked``: the attempt script already booked this row in the ledger (a call's outcome), so
    the ledger observer leaves it alone. ``replayed``: an earlier delivery already reported this
    attempt (metrics do not count it twice). ``estimated``: the tokens are the estimate of a call
    that may have been billed without a usage report. ``saved_usd``: of an answer from the
    response cache (outcome ``cached``), what the answer cost when a provider gave it.
    ``call_id``: the call whose row this is (the ledger keeps one row per call).
    """

    request_id: str
    journey_id: str
    position: int
    hop: Hop
    attempt: Attempt
    route: Route
    user_id: str | None
    completion: Completion | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    at: float = 0.0
    booked: bool = False
    replayed: bool = False
    estimated: bool = False
    saved_usd: Decimal = Decimal(0)
    #: The call this hop made (its delivery's owner name), or ``""`` when it made none.
    call_id: str = ""


Observer = Callable[[AttemptEvent], None]
