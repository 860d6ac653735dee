"""What the replica acknowledgement costs a paid hop: ``begin``, ``finish`` and the whole hop, with
``AIPOOL_REDIS_REPLICA_ACKS`` 0 and 1 (aipool/attempt/lifecycle.py, aipool/redis/durability.py).

Run: ``.venv/bin/python -m bench.bench_attempt_acks`` (``BENCH_ROUNDS`` hops per mode). Starts its
own master and replica (``redis-server`` on free loopback ports, append-only files in a temporary
directory, removed afterwards) and runs the pool's hop runner (:class:`~aipool.attempt.runner.HopRunner`)
over the real attempt script on the master: one paid hop (a priced, limited provider that answers
at once) per round, a new request each, the two modes taking turns round by round so that load
from other processes falls on both alike. Prints p50/p99 in microseconds of ``begin``, ``finish``
(each as :class:`~aipool.attempt.lifecycle.AttemptBook` runs it: the script, and with the
acknowledgement its ``WAIT`` in the same pipeline) and the whole hop (``HopRunner.run``: begin, the
call, finish, the result); then, the replica stopped, the same with the acknowledgement on and
not required (each write waits out its 100 ms timeout, and the call is made).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from aipool.attempt.identity import journey_id
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.money import MoneyRules
from aipool.attempt.runner import HopRunner
from aipool.attempt.visit import Done
from aipool.breaker import breakers_for
from aipool.contract.completion import Completion
from aipool.contract.journey import Journey
from aipool.contract.request import Request, parse_request
from aipool.contract.route import Hop, Route
from aipool.quota import quotas_for
from aipool.redis.durability import ReplicaAcks
from aipool.settings.provider_limits import BreakerSettings, ProviderLimits, QuotaLimits
from bench import figures
from bench.bench_guards import ROUNDS, WARMUP
from bench.bench_replica_ack import master_and_replica

RAW = {"prompt": "What is a pod?"}
REQUEST = parse_request(RAW)
ROUTE = Route(
    intent="QUERY",
    complexity=1,
    chain=(Hop("gemini", "gemini-2.5-flash"), Hop("static", "static")),
    reason="bench",
)
#: Limits high enough that nothing is refused: the bench measures the writes, not a refusal.
ROOMY = ProviderLimits(
    BreakerSettings(failure_threshold=5, recovery_timeout=60.0, half_open_max_calls=3),
    QuotaLimits(rpm=10_000_000, daily_requests=10**9, daily_tokens=10**12, monthly_tokens=10**13),
)
#: Hops measured while no replica can answer: each write waits out the timeout.
ROUNDS_WITHOUT_REPLICA = 20
MODES = {"off": ReplicaAcks(), "WAIT 1": ReplicaAcks(replicas=1, timeout_s=0.1)}


class Instant:
    """A provider that answers at once."""

    name = "gemini"

    def complete(
        self,
        request: Request,
        model: str,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        return Completion(text="an answer", model=model, input_tokens=12, output_tokens=30)

    def close(self) -> None:
        return None


class TimedBook(AttemptBook):
    """The attempt book, timing its ``begin`` and ``finish`` (µs) into ``samples``."""

    samples: dict[str, list[float]]

    def begin(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("begin", super().begin, args, kwargs)

    def finish(self, *args: Any, **kwargs: Any) -> Any:
        return self._timed("finish", super().finish, args, kwargs)

    def _timed(self, op: str, run: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return run(*args, **kwargs)
        finally:
            self.samples[op].append((time.perf_counter_ns() - start) / 1000)


def _runner(client: Any, acks: ReplicaAcks) -> tuple[HopRunner, TimedBook]:
    limits = {"gemini": ROOMY}
    book = TimedBook(
        client,
        breakers_for(client, limits),
        quotas_for(client, limits),
        money=MoneyRules(None, Decimal(10), None, "normal"),
        acks=acks,
    )
    book.samples = {"begin": [], "finish": []}
    runner = HopRunner(
        book,
        observers=[],
        pricing=lambda *_: Decimal("0.0001"),
        providers=lambda _name: Instant(),
    )
    return runner, book


def main() -> None:
    with master_and_replica("aipool-bench-acks-") as pair:
        runners = {name: _runner(pair.client, acks) for name, acks in MODES.items()}
        hops: dict[str, list[float]] = {name: [] for name in MODES}
        run = uuid.uuid4().hex[:8]
        for n in range(WARMUP + ROUNDS):
            for name, (runner, book) in runners.items():
                request_id = f"bench-{run}-{name}-{n}"
                journey = Journey(route=ROUTE, position=0, id=journey_id(request_id, RAW))
                start = time.perf_counter_ns()
                step = runner.run(REQUEST, request_id, journey)
                took = (time.perf_counter_ns() - start) / 1000
                assert isinstance(step, Done) and step.result["status"] == "ok", step
                if n < WARMUP:
                    book.samples = {"begin": [], "finish": []}
                else:
                    hops[name].append(took)
        waits = pair.client.info("commandstats").get("cmdstat_wait", {}).get("calls", 0)
        print(f"master :{pair.master_port}, replica :{pair.replica_port}, rounds={ROUNDS} per mode")
        print(f"{'step':<34} {'p50 µs':>9} {'p99 µs':>9}")
        for name, (_, book) in runners.items():
            for op in ("begin", "finish"):
                p50, p99 = figures.p50(book.samples[op]), figures.p99(book.samples[op])
                print(f"{op + ', ' + name:<34} {p50:>9.1f} {p99:>9.1f}")
            p50, p99 = figures.p50(hops[name]), figures.p99(hops[name])
            print(f"{'whole hop, ' + name:<34} {p50:>9.1f} {p99:>9.1f}")
        print(f"WAIT commands the master ran: {waits}")
        # No replica: each deciding write waits out its timeout (not required: the call is made).
        pair.replica.terminate()
        pair.replica.wait(timeout=10)
        runner, book = runners["WAIT 1"]
        book.samples = {"begin": [], "finish": []}
        down: list[float] = []
        for n in range(ROUNDS_WITHOUT_REPLICA):
            request_id = f"bench-{run}-down-{n}"
            journey = Journey(route=ROUTE, position=0, id=journey_id(request_id, RAW))
            start = time.perf_counter_ns()
            step = runner.run(REQUEST, request_id, journey)
            down.append((time.perf_counter_ns() - start) / 1000)
            assert isinstance(step, Done) and step.result["status"] == "ok", step
        for op in ("begin", "finish"):
            p50, p99 = figures.p50(book.samples[op]), figures.p99(book.samples[op])
            print(f"{op + ', WAIT 1, replica down':<34} {p50:>9.1f} {p99:>9.1f}")
        p50, p99 = figures.p50(down), figures.p99(down)
        print(f"{'whole hop, WAIT 1, replica down':<34} {p50:>9.1f} {p99:>9.1f}")


if __name__ == "__main__":
    main()
