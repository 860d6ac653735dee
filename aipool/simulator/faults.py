"""Faults a simulated provider can be switched into, validated from plain keyword options.

Kinds and their options (every kind also takes ``times``: the fault covers only the next ``times``
calls, then the provider is healthy again; without it the fault lasts until healed):

- ``down``: the port stops listening, so clients get *connection refused*; healing re-binds the
  same port. With ``times`` the port keeps listening instead and resets the next ``times``
  connections' requests unanswered (a refused connection never reaches us, so it cannot be counted).
- ``error_500``: HTTP 500 in the provider's own error format.
- ``bad_request``: HTTP 400 in the provider's own error format: the provider is healthy but refuses
  this request (it must not count against the provider's breaker).
- ``rate_limit``: HTTP 429 with a ``Retry-After`` header of ``retry_after`` seconds (default 1).
- ``overloaded``: the provider's "overloaded" answer: 529 for Anthropic, 503 for the others (what
  each real service sends); ``status`` overrides the code.
- ``hang``: hold the request ``seconds`` (default 30), longer than any client timeout, then answer.
- ``slow``: answer correctly after ``ms`` milliseconds (default 500).
- ``malformed``: HTTP 200 whose body is not valid JSON (``body="json"``, the default) or valid JSON
  outside the provider's schema (``body="schema"``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

FAULT_KINDS: tuple[str, ...] = (
    "down",
    "error_500",
    "bad_request",
    "rate_limit",
    "overloaded",
    "hang",
    "slow",
    "malformed",
)
#: Kind names that mean "no fault"; setting one heals the provider.
HEALTHY_KINDS: tuple[str, ...] = ("healthy", "none", "ok", "heal")

_OPTIONS: dict[str, frozenset[str]] = {
    "down": frozenset(),
    "error_500": frozenset(),
    "bad_request": frozenset(),
    "rate_limit": frozenset({"retry_after", "seconds"}),
    "overloaded": frozenset({"status"}),
    "hang": frozenset({"seconds"}),
    "slow": frozenset({"ms"}),
    "malformed": frozenset({"body"}),
}

#: The settings worth reporting for each kind (``seconds`` is only an alias for rate limits).
_SHOWN: dict[str, tuple[str, ...]] = {
    "down": (),
    "error_500": (),
    "bad_request": (),
    "rate_limit": ("retry_after",),
    "overloaded": ("status",),
    "hang": ("seconds",),
    "slow": ("ms",),
    "malformed": ("body",),
}


class InvalidFault(ValueError):
    """Raised for an unknown fault kind or an option the kind does not take."""


@dataclass(frozen=True)
class Fault:
    """One fault setting. ``times`` is ``None`` for "until healed"."""

    kind: str
    times: int | None = None
    retry_after: float = 1.0
    seconds: float = 30.0
    ms: float = 500.0
    status: int | None = None
    body: str = "json"

    def to_dict(self) -> dict[str, Any]:
        """Return the kind, ``times`` and the options that matter for this kind."""
        data = asdict(self)
        wanted = {"kind", "times", *_SHOWN[self.kind]}
        return {key: value for key, value in data.items() if key in wanted}


def make_fault(kind: str, **options: Any) -> Fault | None:
    """Validate ``kind`` and ``options`` and return the :class:`Fault`, or ``None`` for healthy."""
    kind = kind.strip().lower()
    if kind in HEALTHY_KINDS:
        return None
    if kind not in _OPTIONS:
        raise InvalidFault(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
    unknown = set(options) - _OPTIONS[kind] - {"times"}
    if unknown:
        raise InvalidFault(f"fault {kind!r} takes no option(s) {', '.join(sorted(unknown))}")
    times = options.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise InvalidFault(f"times must be a positive integer, got {times!r}")
    fields: dict[str, Any] = {"kind": kind, "times": times}
    if kind == "rate_limit":
        # ``seconds`` is accepted too: it is the natural word for a Retry-After value.
        fields["retry_after"] = _non_negative(
            "retry_after", options.get("retry_after", options.get("seconds", 1.0))
        )
    elif kind == "hang":
        fields["seconds"] = _non_negative("seconds", options.get("seconds", 30.0))
    elif kind == "slow":
        fields["ms"] = _non_negative("ms", options.get("ms", 500.0))
    elif kind == "overloaded" and options.get("status") is not None:
        status = options["status"]
        if not isinstance(status, int) or not 400 <= status <= 599:
            raise InvalidFault(f"status must be an HTTP error code, got {status!r}")
        fields["status"] = status
    elif kind == "malformed":
        body = options.get("body", "json")
        if body not in ("json", "schema"):
            raise InvalidFault(f"malformed body must be 'json' or 'schema', got {body!r}")
        fields["body"] = body
    return Fault(**fields)


def _non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidFault(f"{name} must be a non-negative number, got {value!r}")
    return float(value)
