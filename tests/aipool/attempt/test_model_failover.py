"""The attempt's lifecycle model with one more event: a failover to a replica behind by the last
writes (``docs/attempts.md``, the table's row "replica promoted, behind by the last writes").

The pool runs with the replica acknowledgement on (``AIPOOL_REDIS_REPLICA_ACKS``): the ``begin``
and ``finish`` of every paid hop return only once a replica holds them, and a replica holds a
prefix of the master's writes, so it holds everything written up to that moment. The model keeps
a copy of the Redis state (``DUMP`` of every key) and of its own after each such write, and the
rule ``replica_promoted`` restores the last copy: every write since (routes, skips, sweeps, a
breaker opened, a free hop's outcome) is lost, as a promoted replica would lack them. A free hop's
``begin`` is not acknowledged (a free, unlimited model called twice costs nothing), so while one
is the last ``Call`` made the failover waits for the next acknowledged write.

On top of the model's own checks, after every step: no paid attempt's provider is called twice,
counting the calls made before a failover too (the model's own count goes back with the copy).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from aipool.attempt.layout import Call, Header
from aipool.attempt.lifecycle import AttemptBook
from tests.aipool.attempt.test_model import AttemptLifecycle
from tests.support.sizes import sized

EXAMPLES = sized(100, 1000, "AIPOOL_TEST_MODEL_EXAMPLES")


class Acknowledging:
    """A worker's attempt book whose paid ``begin`` and ``finish`` are held by a replica the
    moment they return (what ``WAIT`` guarantees): each tells the model to keep a copy."""

    def __init__(self, book: AttemptBook, model: FailoverLifecycle) -> None:
        self.book = book
        self.model = model

    def begin(self, h: Header, position: int, **options: Any) -> Any:
        reply = self.book.begin(h, position, **options)
        if isinstance(reply, Call):
            self.model.made[(h.journey_id, position)].add(options["owner"])
        self.model.written(h, position, free_call=isinstance(reply, Call))
        return reply

    def finish(self, h: Header, position: int, *args: Any, **options: Any) -> Any:
        reply = self.book.finish(h, position, *args, **options)
        self.model.written(h, position, free_call=False)
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.book, name)


class FailoverLifecycle(AttemptLifecycle):
    # Its own check (no paid call twice across failovers) does not hold across an empty restart.
    restarts_empty = False

    def __init__(self) -> None:
        # What the model knows is whatever its own __init__ adds to the state machine's: that is
        # what a failover takes back, together with Redis (but not the books, nor their client).
        RuleBasedStateMachine.__init__(self)
        machine = set(vars(self))
        super().__init__()
        # The workers' host clocks (skews) are the hosts', not Redis's: a failover keeps them.
        self.known = sorted(set(vars(self)) - machine - {"client", "pool", "workers", "skews"})
        #: The owners that got a call, per attempt (journey, position): never taken back by a
        #: failover (the provider was called), and one owner asking again gets the same call.
        self.made: defaultdict[tuple[str, int], set[str]] = defaultdict(set)
        #: The Redis state a replica held at the last acknowledged write, and the model's then.
        self.held: tuple[list[tuple[bytes, int, bytes]], dict[str, Any]] | None = None
        self._dumped: list[tuple[bytes, int, bytes]] | None = None
        #: A free hop's call was begun since the last acknowledged write (its begin unheld).
        self.unheld_call = False
        self.failovers = 0

    def written(self, h: Header, position: int, *, free_call: bool) -> None:
        """A ``begin`` or ``finish`` at ``position`` returned: if paid, a replica holds every
        write so far."""
        paid = h.costs[position] > 0 or self._limited(h, position)
        if not paid:
            self.unheld_call = self.unheld_call or free_call
            return
        self._dumped = [
            (key, max(0, int(self.client.pttl(key))), self.client.dump(key))
            for key in self.client.scan_iter()
        ]

    def _worker(self, index: int) -> AttemptBook:
        return Acknowledging(super()._worker(index), self)  # type: ignore[return-value]

    @invariant()
    def a_replica_holds_the_last_acknowledged_write(self) -> None:
        # Not a check: the model's state is final once the step's rule returned, so the copy
        # of the model is taken here, beside the Redis state dumped at the write.
        if self._dumped is None:
            return
        mine = {name: getattr(self, name) for name in self.known}
        self.held = (self._dumped, copy.deepcopy(mine))
        self._dumped = None
        self.unheld_call = False

    @precondition(lambda self: self.held is not None and not self.unheld_call)
    @rule()
    def replica_promoted(self) -> None:
        """The master dies; the replica, which holds every write up to the last acknowledged
        one and none after it, becomes the master."""
        assert self.held is not None
        dumped, mine = self.held
        self.client.flushdb()
        for key, ttl, value in dumped:
            self.client.restore(key, ttl, value)
        for name, value in copy.deepcopy(mine).items():
            setattr(self, name, value)
        self.failovers += 1

    @invariant()
    def no_paid_call_twice_across_failovers(self) -> None:
        for request in self.requests:
            h = request.header
            for position in range(len(h.chain) - 1):
                if h.costs[position] > 0 or self._limited(h, position):
                    owners = self.made[(h.journey_id, position)]
                    assert len(owners) <= 1, (h.chain[position], owners)


FailoverLifecycle.TestCase.settings = settings(
    AttemptLifecycle.TestCase.settings, max_examples=EXAMPLES
)
TestFailoverLifecycle = FailoverLifecycle.TestCase
