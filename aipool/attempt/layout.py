"""The layouts between Python and ``attempt.lua``, named once: keys, arguments, replies.

``attempt.lua``'s header comment says what each position holds; this module is the only code that
builds those positions or reads a reply, so the two sides change together (and
``tests/aipool/attempt/test_layout.py`` checks they agree).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aipool.attempt.result_write import ResultWrite
from aipool.breaker import Breaker
from aipool.contract.route import Hop
from aipool.contract.vocabulary import Outcome, outcome_named
from aipool.ledger.usage_log import PENDING_KEY
from aipool.periods import Period, day_of, month_of
from aipool.quota import Quota
from aipool.quota.storage import DAY_KEEP, MONTH_KEEP
from aipool.redis.lua import text

LEASES_KEY = "aipool:attempt:leases"

#: The ops of the script.
BEGIN, FINISH, ADVANCE, SWEEP = "begin", "finish", "advance", "sweep"


def record_key(journey_id: str, provider: str) -> str:
    """The record of one attempt (a journey's hop, named by its provider: a chain holds each
    once): its state, owner, lease, charge and what came after it."""
    return f"aipool:attempt:{journey_id}:{provider}"


def answer_key(journey_id: str, provider: str) -> str:
    """The answer an attempt got, kept while a message of it can still arrive."""
    return f"aipool:attempt:{journey_id}:{provider}:answer"


def replay_key(journey_id: str) -> str:
    """Set once a hop killed by its hard time limit after its answer was recorded is given back
    to its queue to be answered (``tasks/generate.py``): once per journey, so a replay that dies
    too ends in ``time_limit`` instead of coming back for ever."""
    return f"aipool:attempt:{journey_id}:replay"


def route_key(journey_id: str) -> str:
    """The request's route record: when the pool first saw it, and where routing sent it."""
    return f"aipool:attempt:{journey_id}:route"


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
class Stale:
    """The periods the caller named do not hold Redis's time (``now``): ask again."""

    now: float


Transition = tuple[str, str, int]


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


def read_reply(raw: Sequence[Any]) -> tuple[Any, list[Transition]]:
    """The reply of any op, and the breaker transitions it reports."""
    kind, now_text, events_text, *rest = (text(v) if isinstance(v, bytes) else v for v in raw)
    now = float(now_text)
    events = [(str(a), str(b), int(c)) for a, b, c in json.loads(events_text)]
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
    elif kind == "swept":
        reply = int(rest[0])
    else:
        raise ValueError(f"attempt.lua answered an unknown reply {kind!r}")
    return reply, events


# -- arguments ----------------------------------------------------------------------------------


class HopConfigs:
    """Each hop's guard keys and config JSON, for the day and month of a given instant.

    The parts that do not change between calls (a provider's settings; a day's and month's
    labels and bounds) are serialised once and reused.
    """

    def __init__(self, breakers: Mapping[str, Breaker], quotas: Mapping[str, Quota]) -> None:
        self.breakers = breakers
        self.quotas = quotas
        self._static: dict[str, str] = {}
        self._periods: tuple[Period, Period, str] | None = None

    def periods(self, now: float, provider: str) -> tuple[Period, Period, str]:
        """The day and month holding ``now``, and their JSON part."""
        cached = self._periods
        if cached is not None and cached[0].start <= now < cached[0].end:
            return cached
        tz = self.quotas[provider].tz
        day, month = day_of(now, tz), month_of(now, tz)
        part = (
            f'"d":[{json.dumps(day.label)},{day.start!r},{day.end!r},{day.end + DAY_KEEP!r}],'
            f'"m":[{json.dumps(month.label)},{month.end!r},{month.end + MONTH_KEEP!r}]'
        )
        self._periods = (day, month, part)
        return self._periods

    def _static_part(self, provider: str) -> str:
        part = self._static.get(provider)
        if part is None:
            quota = self.quotas[provider]
            part = (
                f'"p":{json.dumps(provider)},'
                f'"b":{json.dumps(self.breakers[provider].setting_values())},'
                f'"lim":{0 if quota.limits.unlimited else 1},'
                f'"q":{json.dumps(quota.limit_values())}'
            )
            self._static[provider] = part
        return part

    def config(self, hop: Hop, now: float, skip: str = "", money: str = "") -> str:
        """The config JSON of ``hop`` for the periods holding ``now``; ``money`` is the request's
        part of it (``"c":...,"s":[...],"sv":...``), or empty."""
        part = self.periods(now, hop.provider)[2]
        extra = f",{money}" if money else ""
        return f'{{"skip":{json.dumps(skip)},{self._static_part(hop.provider)},{part}{extra}}}'

    def keys(self, provider: str, now: float) -> list[str]:
        """The five guard keys of ``provider`` for the periods holding ``now``."""
        day, month, _ = self.periods(now, provider)
        breaker = self.breakers[provider].store
        quota = self.quotas[provider].store
        return [
            breaker.state_key,
            breaker.trials_key,
            quota.window_key,
            quota.day_key(day.label),
            quota.month_key(month.label),
        ]


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


def header_args(
    op: str,
    script_time: float | None,
    header: Header,
    record_keep: int,
    configs: list[str],
    money: str = "",
) -> list[Any]:
    """ARGV[1 .. 10 + n]: the op, the time, the request, its money rules and the candidate hops'
    configs."""
    return [
        op,
        "" if script_time is None else repr(script_time),
        header.request_id,
        record_keep,
        "" if header.deadline_s is None else repr(header.deadline_s),
        header.tokens,
        header.chain[-1].provider,
        "" if header.received is None else repr(header.received),
        money,
        len(configs),
        *configs,
    ]


def spend_key(month: str) -> str:
    """A month's spend on paid calls, pool-wide and per service (micro-dollars): what the money
    rules admit calls by; the ledger, from which the beat restores it, is the account."""
    return f"aipool:spend:{month}"


def header_keys(first: str, journey_id: str, month: str, answer: str | None = None) -> list[str]:
    """KEYS[1 .. 6]: the record, its answer, the leases, the ledger's spool, the route record,
    the month's spend."""
    return [
        first,
        answer or f"{first}:answer",
        LEASES_KEY,
        PENDING_KEY,
        route_key(journey_id),
        spend_key(month),
    ]


def result_args(write: ResultWrite | None) -> list[Any]:
    """ARGV[args + 13 ..] of ``finish``: the producer's result written with the answer (its
    encoded value, seconds to keep it, the usage records riding with it), or nothing."""
    if write is None:
        return []
    return [write.value, write.expires, *write.records]
