"""A reservation: one call counted against a provider's quota, until its real usage is known."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reservation:
    """What ``Quota.reserve`` counted; hand it to ``settle`` or ``release`` once.

    ``tokens`` is the amount counted (the estimate); ``day`` and ``month`` are the periods charged
    (the ones in force when it was reserved, even if it is settled after midnight); ``at`` is when
    it entered the request window. ``unlimited`` reservations touch no counter at all (their
    ``day`` and ``month`` are empty). A reservation is not a record of the call: the attempt's
    record (:mod:`aipool.attempt`) is what makes a call happen once.
    """

    provider: str
    request_id: str
    attempt: int
    tokens: int
    at: float
    day: str
    month: str
    unlimited: bool = False

    @property
    def name(self) -> str:
        """The call's member name in the request window: ``{request_id}:{attempt}``."""
        return f"{self.request_id}:{self.attempt}"
