"""Driving attempts by hand: a pool of simulated workers over one Redis and one script clock.

The attempt script reads Redis's ``TIME``; these tests hand it their own clock instead (the
``script_time`` seam of :class:`~aipool.attempt.lifecycle.AttemptBook`), so leases, deadlines and
breaker windows pass without sleeping, and each worker's own clock can disagree with it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from aipool.attempt.clock import RedisClock
from aipool.attempt.layout import Call, Header
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.money import MoneyRules
from aipool.attempt.result_write import ResultWrite
from aipool.breaker import breakers_for
from aipool.contract.route import Hop
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import PENDING_KEY
from aipool.quota import quotas_for
from aipool.routing.table import RouteTable, load_table
from aipool.settings.provider_limits import ProviderLimits
from tests.support.guards import Clock

#: A general chain starting at a limited provider: gemini → claude → static.
CHAIN = (
    Hop("gemini", "gemini-2.5-flash"),
    Hop("claude", "claude-sonnet-4-5"),
    Hop("static", "static"),
)
#: 2026-11-18 late morning in Taipei: far from a day or month boundary.
BASE = 1_795_000_000.0


class SimulatedPool:
    """Workers (each an :class:`AttemptBook` with its own host clock) over one Redis."""

    def __init__(
        self,
        client: Any,
        limits: dict[str, ProviderLimits] | None = None,
        now: float = BASE,
        answer_keep: int = 360,
        money: MoneyRules | None = None,
        table: RouteTable | None = None,
    ) -> None:
        self.client = client
        self.limits = limits
        self.time = Clock(now)
        self.answer_keep = answer_keep
        self.money = money or MoneyRules(None, Decimal(10), None, "normal")
        self.table = table or load_table()

    def worker(self, skew: float | Callable[[], float] = 0.0) -> AttemptBook:
        """A worker whose host clock is ``skew`` seconds off the pool's (a callable: as far off as
        it says at each reading, a host clock that steps)."""
        off: Callable[[], float] = skew if callable(skew) else (lambda: skew)
        breakers = breakers_for(self.client, self.limits, clock=self.time)
        quotas = quotas_for(self.client, self.limits, clock=self.time)
        return AttemptBook(
            self.client,
            breakers,
            quotas,
            clock=RedisClock(lambda: self.time.now + off()),
            script_time=lambda: self.time.now,
            answer_keep=self.answer_keep,
            money=self.money,
            table=lambda: self.table,
        )


def header(
    journey_id: str = "journey-1",
    request_id: str = "request-1",
    *,
    chain: tuple[Hop, ...] = CHAIN,
    deadline_s: float | None = None,
    tokens: int = 100,
    service: str = "other",
    priority: str = "normal",
    costs: tuple[int, ...] = (),
) -> Header:
    return Header(
        journey_id,
        request_id,
        chain,
        deadline_s,
        tokens,
        service=service,
        priority=priority,
        costs=costs,
    )


def row(
    h: Header,
    position: int,
    outcome: str,
    tokens: int,
    *,
    estimated: bool = False,
    call_id: str = "",
) -> str:
    """A ledger row as the runner books it (tokens split 1:1, $0.001 per token); ``call_id``:
    the call it books (its owner's name)."""
    hop = h.chain[position]
    return UsageRecord(
        h.request_id,
        position,
        hop.provider,
        hop.model,
        outcome,
        outcome == "ok",
        input_tokens=tokens // 2,
        output_tokens=tokens - tokens // 2,
        cost_usd=Decimal(tokens) / 1000,
        journey_id=h.journey_id,
        estimated=estimated,
        call_id=call_id,
    ).to_json()


def begin(
    book: AttemptBook,
    h: Header,
    position: int = 0,
    *,
    owner: str = "",
    bound: float = 30.0,
    skips: Mapping[int, str] | None = None,
) -> Any:
    """One delivery of the attempt at ``position``; its owner name is ``owner`` (or a new one);
    ``skips``: the hops its runner passes over before asking (:class:`~aipool.attempt.visit.Visit`)."""
    owner = owner or uuid.uuid4().hex
    return book.begin(
        h,
        position,
        owner=owner,
        bound_s=bound,
        abandoned_row=lambda start: row(
            h, position, "abandoned", h.tokens, estimated=True, call_id=owner
        ),
        skips=skips,
    )


def answered(
    book: AttemptBook,
    h: Header,
    position: int,
    call: Call,
    owner: str,
    tokens: int = 42,
    cost: int = 0,
    result: ResultWrite | None = None,
) -> Any:
    """The owner's call answered with ``tokens`` tokens costing ``cost`` micro-dollars;
    ``result``: the producer's result written with it."""
    return book.finish(
        h,
        position,
        call,
        owner=owner,
        answered=True,
        verdict="success",
        booked=tokens,
        answer=json.dumps({"text": f"answer of {h.journey_id}", "model": h.chain[position].model}),
        ledger_row=row(h, position, "ok", tokens, call_id=owner),
        cost=cost,
        result=result,
    )


def result_write(
    h: Header, owner: str, records: tuple[str, ...] = (), status: str = "SUCCESS"
) -> ResultWrite:
    """A result as Celery's Redis backend stores it for ``h``'s task id, naming ``owner``."""
    meta = {"status": status, "result": {"status": "ok", "by": owner}, "task_id": h.request_id}
    return ResultWrite(
        task_id=h.request_id,
        key=f"celery-task-meta-{h.request_id}",
        value=json.dumps(meta),
        expires=3600,
        records=records,
    )


def failed(
    book: AttemptBook,
    h: Header,
    position: int,
    call: Call,
    owner: str,
    *,
    verdict: str = "failure",
    billed: bool = False,
    code: str = "server_error",
    pause_s: float = 0.0,
) -> Any:
    """The owner's call failed: counted against the provider (``verdict``), billed its
    estimate when ``billed``; ``pause_s``: the provider declared a retry delay that long."""
    booked = h.tokens if billed else 0
    return book.finish(
        h,
        position,
        call,
        owner=owner,
        answered=False,
        verdict=verdict,
        booked=booked,
        answer="",
        ledger_row=row(h, position, "error", booked, estimated=billed, call_id=owner),
        code=code,
        detail=(f"{code}: test",),
        cost=(h.costs[position] if billed and position < len(h.costs) else 0),
        pause_s=pause_s,
    )


def ledger(client: Any) -> list[UsageRecord]:
    """The ledger rows waiting in Redis, oldest first."""
    return [UsageRecord.from_json(raw) for raw in reversed(client.lrange(PENDING_KEY, 0, -1))]


def usage(book: AttemptBook, provider: str = "gemini") -> tuple[int, int]:
    """(requests, tokens) the provider's quota counts today."""
    report = book.quotas[provider].usage()
    return int(report["daily_requests"]["used"] or 0), int(report["daily_tokens"]["used"] or 0)
