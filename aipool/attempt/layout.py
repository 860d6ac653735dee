"""The layouts between Python and ``attempt.lua``, named once: keys, arguments, replies.

``attempt.lua``'s header comment says what each position holds; this module is the only code that
builds those positions or reads a reply, so the two sides change together (and
``tests/aipool/attempt/test_layout.py`` checks they agree).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from aipool.attempt.result_write import ResultWrite
from aipool.breaker.storage import tripped_time
from aipool.contract.route import Hop
from aipool.contract.vocabulary import Outcome, outcome_named
from aipool.periods import Period
from aipool.redis.lua import text

#: The prefix of every attempt's own keys. ``attempt.lua`` builds the record, answer and route
#: keys below from it (read from the stored hop configuration, :mod:`aipool.attempt.hop_config`)
#: the same way: ``<prefix><journey>:<provider>``, ``...:answer``, ``<prefix><journey>:route``.
ATTEMPT_PREFIX = "aipool:attempt:"
LEASES_KEY = f"{ATTEMPT_PREFIX}leases"
#: The prefix of a month's spend (:func:`spend_key`).
SPEND_PREFIX = "aipool:spend:"

#: The ops of the script.
BEGIN, FINISH, ADVANCE, SWEEP = "begin", "finish", "advance", "sweep"


def record_key(journey_id: str, provider: str) -> str:
    """The record of one attempt (a journey's hop, named by its provider: a chain holds each
    once): its state, owner, lease, charge and what came after it."""
    return f"{ATTEMPT_PREFIX}{journey_id}:{provider}"


def answer_key(journey_id: str, provider: str) -> str:
    """The answer an attempt got, kept while a message of it can still arrive."""
    return f"{record_key(journey_id, provider)}:answer"


def replay_key(journey_id: str) -> str:
    """Set once a hop killed by its hard time limit after its answer was recorded is given back
    to its queue to be answered (``tasks/generate.py``): once per journey, so a replay that dies
    too ends in ``time_limit`` instead of coming back for ever."""
    return f"{ATTEMPT_PREFIX}{journey_id}:replay"


def route_key(journey_id: str) -> str:
    """The request's route record: when the pool first saw it, and where routing sent it."""
    return f"{ATTEMPT_PREFIX}{journey_id}:route"


# -- replies ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Passed:
    """A hop passed over without a call: its provider, why (a code of the attempt vocabulary),
    and the script's details (a retry time, a limit and its figures)."""

    provider: str
    code: Outcome
    detail: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    """Where the request goes after an attempt (or after routing): the next hop (a provider, or
    the terminal answer's name) and the hops passed over on the way."""

    next: str
    passed: tuple[Passed, ...] = ()


@dataclass(frozen=True)
class Call:
    """CALLING: this delivery owns the attempt and may call the provider once, for at most
    ``limit_s`` seconds (the provider's timeout, cut by the deadline); its lease ends at
    ``lease``. ``now`` is when the call began (Redis's time): the day and month it is charged to."""

    now: float
    generation: int
    trial: str
    limit_s: float
    lease: float


@dataclass(frozen=True)
class Kept:
    """ANSWERED earlier: the kept answer (JSON), or ``""`` once it is no longer kept."""

    now: float
    answer: str


@dataclass(frozen=True)
class Busy:
    """CALLING by another delivery whose lease is live: this one must not call."""

    now: float
    lease: float


@dataclass(frozen=True)
class Ended:
    """The attempt ended without an answer (``failed``, ``skipped`` or ``abandoned``), now or
    earlier: why (``code``, ``detail``), and where the request goes next."""

    now: float
    state: str
    code: str
    detail: tuple[str, ...]
    decision: Decision


@dataclass(frozen=True)
class Recorded:
    """The owner's answer is recorded (charged, kept, its ledger row booked)."""

    now: float


@dataclass(frozen=True)
class Missing:
    """This call's record is gone (Redis restarted empty), or is another delivery's since: the
    call was booked anyway (its own ledger row and its charge)."""

    now: float


@dataclass(frozen=True)
class Foreign:
    """The record belongs to another request id, or another owner: nothing was changed."""

    now: float


@dataclass(frozen=True)
class Routed:
    """The route record: when the pool first saw the request, and its first hop."""

    now: float
    received: float
    decision: Decision


@dataclass(frozen=True)
class ConfigMissing:
    """The stored hop configuration the op named is not in Redis (a restart, a flush, an
    eviction, its expiry): nothing was changed; write it and ask again."""

    now: float


@dataclass(frozen=True)
class Stale:
    """The periods the caller named do not hold Redis's time (``now``): ask again."""

    now: float


#: A breaker transition an op caused: (from, to, consecutive failures, when its outage began,
#: see ``BreakerTransition.tripped_at``).
Transition = tuple[str, str, int, float | None]


def _transition(raw: Sequence[Any]) -> Transition:
    old, new, failures, *tripped = raw
    return str(old), str(new), int(failures), tripped_time(tripped[0] if tripped else None)


def _detail(raw: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in json.loads(text(raw) or "[]"))


def _outcome(code: Any) -> Outcome:
    named = outcome_named(str(code))
    if named is None:
        raise ValueError(f"attempt.lua named an unknown outcome {code!r}")
    return named


def _decision(next_hop: Any, trail: Any) -> Decision:
    passed = tuple(
        Passed(str(entry[0]), _outcome(entry[1]), tuple(str(v) for v in entry[2:]))
        for entry in json.loads(text(trail) or "[]")
    )
    return Decision(text(next_hop), passed)


def changed_something(raw: Sequence[Any]) -> bool:
    """Whether a raw reply may come from a script that wrote: every reply but ``config``, which
    the script gives before it reads or writes anything else."""
    return text(raw[0]) != "config"


def read_reply(raw: Sequence[Any]) -> tuple[Any, list[Transition]]:
    """The reply of any op, and the breaker transitions it reports."""
    kind, now_text, events_text, *rest = (text(v) if isinstance(v, bytes) else v for v in raw)
    now = float(now_text)
    events = [_transition(event) for event in json.loads(events_text)]
    reply: Any
    if kind == "call":
        generation, trial, limit_s, lease = rest
        reply = Call(now, int(generation), str(trial), float(limit_s), float(lease))
    elif kind == "answered":
        reply = Kept(now, str(rest[0])) if rest else Recorded(now)
    elif kind == "busy":
        reply = Busy(now, float(rest[0]))
    elif kind in ("ended", "done"):
        state, code, detail, next_position, trail = rest
        if kind == "done" and state == "answered":
            reply = Recorded(now)
        else:
            reply = Ended(
                now, str(state), str(code), _detail(detail), _decision(next_position, trail)
            )
    elif kind == "next":
        next_position, trail, received = rest
        reply = Routed(now, float(received), _decision(next_position, trail))
    elif kind == "missing":
        reply = Missing(now)
    elif kind == "foreign":
        reply = Foreign(now)
    elif kind == "clock":
        reply = Stale(now)
    elif kind == "config":
        reply = ConfigMissing(now)
    elif kind == "swept":
        reply = int(rest[0])
    else:
        raise ValueError(f"attempt.lua answered an unknown reply {kind!r}")
    return reply, events


# -- arguments ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    """What every op is told: the request, its latency budget, the size of a call, and the hops
    that may come after this one."""

    journey_id: str
    request_id: str
    chain: tuple[Hop, ...]
    deadline_s: float | None
    tokens: int
    received: float | None = None
    #: The service the request is counted as, and the priority it is routed with.
    service: str = "other"
    priority: str = "normal"
    #: What a call at each position of the chain may cost (micro-dollars, the estimate).
    costs: tuple[int, ...] = ()


def candidates(chain: Sequence[Hop], after: int) -> list[int]:
    """Positions of the provider hops after position ``after`` (the terminal hop excluded)."""
    return [p for p in range(after + 1, len(chain)) if not chain[p].terminal]


def periods_arg(day: Period, month: Period) -> str:
    """ARGV[14]: the day and month of the caller's estimate of the time, as the script reads
    them: ``<day label> <day start> <day end> <month label> <month end>``."""
    return f"{day.label} {day.start!r} {day.end!r} {month.label} {month.end!r}"


@lru_cache(maxsize=256)
def chain_arg(chain: tuple[Hop, ...]) -> str:
    """ARGV[5]: the chain's providers in order, space-separated (the terminal hop last)."""
    return " ".join(hop.provider for hop in chain)


def header_args(
    op: str,
    script_time: float | None,
    header: Header,
    position: int,
    periods: str,
    skips: Mapping[int, str] | None = None,
) -> list[Any]:
    """ARGV[1 .. 14]: the op, the time, the request and the position of this hop on its chain,
    what a call may cost at each position, the hops ruled out before the script, and the
    periods (:func:`periods_arg`). Everything else the script reads from the stored hop
    configuration."""
    return [
        op,
        "" if script_time is None else repr(script_time),
        header.journey_id,
        header.request_id,
        chain_arg(header.chain),
        position,
        "" if header.deadline_s is None else repr(header.deadline_s),
        header.tokens,
        "" if header.received is None else repr(header.received),
        header.service,
        header.priority,
        " ".join(map(str, header.costs)),
        " ".join(f"{p}:{code}" for p, code in skips.items()) if skips else "",
        periods,
    ]


def spend_key(month: str) -> str:
    """A month's spend on paid calls, pool-wide and per service (micro-dollars): what the money
    rules admit calls by; the ledger, from which the beat restores it, is the account."""
    return f"{SPEND_PREFIX}{month}"


def result_args(write: ResultWrite | None) -> list[Any]:
    """ARGV[27 ..] of ``finish``: the producer's result written with the answer (its key, its
    encoded value, seconds to keep it, the usage records riding with it), or nothing."""
    if write is None:
        return []
    return [write.key, write.value, write.expires, *write.records]
