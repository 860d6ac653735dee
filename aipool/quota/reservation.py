"""A reservation: one call's claim on a provider's quota, named by request id and attempt."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reservation:
    """What ``Quota.reserve`` handed out; give it back to ``settle`` or ``release``.

    ``state`` is the reservation's state when it was returned: ``reserved`` (new or still open),
    or, for a redelivered (request id, attempt) whose first run already finished, ``settled`` or
    ``released`` -- then settling or releasing it again changes nothing. ``tokens`` is the amount
    counted at that moment. ``day`` and ``month`` are the periods charged (the ones in force when
    it was reserved, even if it is settled after midnight). ``unlimited`` reservations touch no
    counter at all (their ``day`` and ``month`` are empty). ``answer`` is the completion (JSON)
    kept beside a ``settled`` reservation while its message can still be redelivered, else empty.
    """

    provider: str
    request_id: str
    attempt: int
    tokens: int
    at: float
    day: str
    month: str
    state: str = "reserved"
    unlimited: bool = False
    answer: str = ""

    @property
    def name(self) -> str:
        """The reservation's name inside its provider's keys: ``{request_id}:{attempt}``."""
        return f"{self.request_id}:{self.attempt}"
