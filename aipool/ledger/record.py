"""The usage record: what a worker hands to the ledger after every attempt at a provider."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from aipool.contract.vocabulary import OUTCOMES


def _now() -> datetime:
    return datetime.now(UTC)


def storable_text(value: str, limit: int | None = None) -> str:
    """``value`` as every store takes it: NULs dropped, lone surrogates replaced, ``limit`` long.

    PostgreSQL refuses NUL in text, and a lone surrogate cannot be encoded as UTF-8 at all (not
    for Redis, not for the database), so either would make a usage record fail to store. A
    surrogate pair split into two code points is joined back into its character.
    """
    if "\x00" in value:
        value = value.replace("\x00", "")
    # ASCII text holds no surrogate (``isascii`` reads a flag CPython keeps): only other text
    # is encoded to find out, which copies it.
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value if limit is None or len(value) <= limit else value[:limit]


@dataclass(frozen=True)
class UsageRecord:
    """One attempt at one provider, as stored in ``ai_usage_logs``.

    ``(journey_id, attempt, call_id)`` identifies the row: recording it twice (a redelivered
    message) still stores one row. ``call_id`` names the call a row books (its delivery's owner
    name; empty for a hop that made no call): two calls of one attempt (a Redis that restarted
    empty under the first) are two rows, one call is one row however often it is recorded. ``journey_id`` is the pool's name for the request (``request_id`` when
    left empty, as records written before journeys were named). ``estimated``: the tokens are the
    reservation's estimate, billed for a call that ended without a usage report. ``created_at``
    is timezone-aware UTC: when the call started, which decides the day and month it counts in
    (:mod:`aipool.ledger.spend`). There is deliberately no field for prompt or answer text.
    """

    request_id: str
    attempt: int
    provider: str
    model: str
    outcome: str
    success: bool
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: int | None = None
    error_message: str | None = None
    user_id: str | None = None
    intent: str | None = None
    complexity: int | None = None
    route_chain: str | None = None
    route_reason: str | None = None
    fallback_position: int = 0
    cost_usd: Decimal = Decimal(0)
    created_at: datetime = field(default_factory=_now)
    id: uuid.UUID = field(default_factory=uuid.uuid4)
    journey_id: str = ""
    estimated: bool = False
    #: The service that sent the request (declared in the route table, else ``other``).
    service: str = "other"
    #: Of an answer from the response cache (outcome ``cached``, $0): what it cost when a
    #: provider gave it, so what this hit saved.
    saved_usd: Decimal = Decimal(0)
    #: The request's trace (32 hex digits) when the pool traces (:mod:`aipool.tracing`).
    trace_id: str | None = None
    #: The call this row books (the owner name of the delivery that made it), or ``""``.
    call_id: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {self.outcome!r}; expected one of {OUTCOMES}")
        if self.created_at.tzinfo is None:
            raise ValueError("created_at must be timezone-aware")
        if not self.journey_id:
            object.__setattr__(self, "journey_id", self.request_id)

    def to_json(self) -> str:
        """A compact JSON string that ``from_json`` turns back into an equal record."""
        # A shallow copy: every field is a scalar (asdict's deep copy costs a hop ~0.1 ms), by
        # names listed once (``fields()`` builds its tuple again on every call).
        data: dict[str, Any] = {name: getattr(self, name) for name in _FIELD_NAMES}
        data["cost_usd"] = str(self.cost_usd)
        data["saved_usd"] = str(self.saved_usd)
        data["created_at"] = self.created_at.astimezone(UTC).isoformat()
        data["id"] = str(self.id)
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> UsageRecord:
        """Parse what ``to_json`` wrote; unknown keys are ignored so older readers keep working."""
        data = json.loads(text)
        known = set(cls.__dataclass_fields__)
        data = {k: v for k, v in data.items() if k in known}
        data["cost_usd"] = Decimal(str(data.get("cost_usd", "0")))
        data["saved_usd"] = Decimal(str(data.get("saved_usd", "0")))
        data["created_at"] = datetime.fromisoformat(data["created_at"]).astimezone(UTC)
        if "id" in data:
            data["id"] = uuid.UUID(data["id"])
        return cls(**data)

    @property
    def tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


#: The record's field names, in order, for :meth:`UsageRecord.to_json`.
_FIELD_NAMES = tuple(f.name for f in fields(UsageRecord))
