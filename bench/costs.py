"""``bench/run --profile``: where the pool's added time goes, step by step, for one request.

The hop's own code runs here, in the bench process, exactly as a worker runs it (the same
functions, the same Redis, the simulated Ollama), with each step wrapped in a meter: thread CPU
(µs), wall time and the Redis round trips it makes (packets sent on redis-py connections: a
pipeline or a transaction is one). A request by name is two hops (router, then ollama), as in a
worker; Celery's own work around each hop (edge inspection, result write, task events, log line)
is measured with the pool's app and with the plain baseline's where plain Celery pays it too.

CPU is what a step costs the worker's core; a round trip costs wall time (about 0.1 ms on
loopback, 0.2 to 1 ms across a network) and no CPU. Run on a machine shared with other work, the
CPU figures are medians of many runs, and still only roughly comparable between runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from bench.environment import Pool
from bench.latency import SIMPLE, by_name

_counter: list[Any] = [None]


def _sent() -> int:
    counter = _counter[0]
    return counter.sent if counter is not None else 0


@dataclass
class Meter:
    """What one step cost over every run: CPU and wall µs, and Redis round trips, per run."""

    cpu_us: list[float] = field(default_factory=list)
    wall_us: list[float] = field(default_factory=list)
    trips: list[int] = field(default_factory=list)

    def row(self) -> dict[str, float]:
        """Medians of CPU and wall time, the mean of round trips."""
        return {
            "cpu_us": statistics.median(self.cpu_us) if self.cpu_us else 0.0,
            "wall_us": statistics.median(self.wall_us) if self.wall_us else 0.0,
            "round_trips": statistics.fmean(self.trips) if self.trips else 0.0,
        }


class Meters:
    """Meters by step name, and the nesting that keeps an outer step from counting inner ones."""

    def __init__(self) -> None:
        self.by_step: dict[str, Meter] = defaultdict(Meter)
        self._inner: list[list[float]] = []
        self._run: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time what runs inside as ``name``, net of the steps nested in it."""
        self._inner.append([0.0, 0.0, 0.0])
        cpu, wall, trips = time.thread_time(), time.perf_counter(), _sent()
        try:
            yield
        finally:
            spent = [
                (time.thread_time() - cpu) * 1e6,
                (time.perf_counter() - wall) * 1e6,
                float(_sent() - trips),
            ]
            inner = self._inner.pop()
            if self._inner:
                for i in range(3):
                    self._inner[-1][i] += spent[i]
            own = self._run.setdefault(name, [0.0, 0.0, 0.0])
            for i in range(3):
                own[i] += spent[i] - inner[i]

    def end_run(self) -> None:
        """One request is over: each step's total in it becomes one sample."""
        for name, (cpu, wall, trips) in self._run.items():
            meter = self.by_step[name]
            meter.cpu_us.append(cpu)
            meter.wall_us.append(wall)
            meter.trips.append(round(trips))
        self._run = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` metered as ``name``."""

        def metered(*args: Any, **kwargs: Any) -> Any:
            with self.step(name):
                return fn(*args, **kwargs)

        return metered


@contextlib.contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    """``target.name`` replaced by ``value`` while the block runs."""
    real = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, real)


#: The steps of the table, in the order a request meets them: (name, who pays it).
STEPS = (
    ("edge inspection", "pool only (plain Celery: none)"),
    ("contract parse", "pool only"),
    ("route decision (own_route: recalled, or decided)", "pool only"),
    ("route record (script)", "pool only"),
    ("journey check", "pool only"),
    ("admission (begin script)", "pool only"),
    ("call (SDK to the simulator)", "both"),
    ("settle (finish script)", "pool only"),
    ("ledger record", "pool only"),
    ("metrics", "pool only"),
    ("alerts (missing model, URL not found)", "pool only"),
    ("log line (hop, scrubbed)", "pool only"),
    ("result dict", "both (plain: a smaller dict)"),
    ("re-dispatch message (Task.replace)", "both"),
    ("result write", "both (pool: + held ledger records)"),
    ("task events (3 per hop)", "both, when events are on"),
    ("Celery's log line (scrubbed)", "both (plain: unscrubbed)"),
)


def _message(app: Any, request_id: str, queue: str, kwargs: dict[str, Any]) -> Any:
    """A kombu message as a worker receives it, built by the app's own protocol 2 encoder."""
    from kombu.message import Message

    headers, properties, body, _ = app.amqp.as_task_v2(request_id, "ai.generate", kwargs=kwargs)
    return Message(
        body=json.dumps(body),
        content_type="application/json",
        content_encoding="utf-8",
        headers=headers,
        properties=properties,
        delivery_info={"routing_key": queue},
    )


def pool_request(pool: Pool, meters: Meters) -> None:
    """One request by name through both hops, every step metered."""
    from celery.app.task import Context

    from aipool.attempt import call, visit
    from aipool.attempt.bound import within
    from aipool.attempt.identity import journey_id
    from aipool.attempt.lifecycle import AttemptBook
    from aipool.attempt.records import HopRecords
    from aipool.contract import result
    from aipool.contract.journey import Journey
    from aipool.contract.request import parse_request
    from aipool.ledger.outbox import OUTBOX
    from aipool.routing.recall import own_route
    from tasks import generate
    from workers.edge.inspection import inspect_message
    from workers.runtime import hop_runner, usage_log

    app = pool.app
    runner = hop_runner()
    tasks = app.tasks
    accept = {"application/json"}
    request_id = str(uuid.uuid4())
    step = meters.step
    observers = runner.observers
    # The ledger's observer, the metrics', then the alerts of the pool's own (a missing model, a
    # provider's URL not found), which act only on those failures.
    ledger, metrics, *alerts = observers
    # The hop looks these up in the modules that run it (tasks.generate, the call): patched
    # there, and the metered parse also called here, as the task calls it.
    parse = meters.wrap("contract parse", parse_request)
    with (
        patched(generate, "parse_request", parse),
        patched(
            generate,
            "own_route",
            meters.wrap("route decision (own_route: recalled, or decided)", own_route),
        ),
        patched(Journey, "received", meters.wrap("journey check", Journey.received)),
        patched(AttemptBook, "route", meters.wrap("route record (script)", AttemptBook.route)),
        patched(AttemptBook, "begin", meters.wrap("admission (begin script)", AttemptBook.begin)),
        patched(AttemptBook, "finish", meters.wrap("settle (finish script)", AttemptBook.finish)),
        patched(call, "within", meters.wrap("call (SDK to the simulator)", within)),
        patched(result, "answered", meters.wrap("result dict", result.answered)),
        patched(
            HopRecords,
            "_observe",
            meters.wrap("log line (hop, scrubbed)", HopRecords._observe),
        ),
        patched(
            runner,
            "observers",
            [
                meters.wrap("ledger record", ledger),
                meters.wrap("metrics", metrics),
                *(meters.wrap("alerts (missing model, URL not found)", a) for a in alerts),
            ],
        ),
    ):
        # Hop 1, on the router's queue.
        message = _message(app, request_id, "router", {"request": SIMPLE})
        with step("edge inspection"):
            assert inspect_message(message, tasks, accept) is None
        OUTBOX.task_started()
        parsed = parse(SIMPLE)
        forward = generate._hop(request_id, parsed, journey_id(request_id, SIMPLE), None, "router")
        assert isinstance(forward, visit.Forward)
        with step("re-dispatch message (Task.replace)"):
            kwargs = {"request": SIMPLE, "journey": forward.journey.to_dict()}
            app.amqp.as_task_v2(
                request_id, "ai.generate", kwargs=kwargs, kwargsrepr=generate.describe(forward)
            )
        _celery_hop_end(pool, meters, request_id, None)
        left = OUTBOX.task_ended()
        if left:
            usage_log().push(left)
        # Hop 2, on Ollama's queue.
        message = _message(app, request_id, "ollama", kwargs)
        with step("edge inspection"):
            assert inspect_message(message, tasks, accept) is None
        OUTBOX.task_started()
        parsed = parse(SIMPLE)
        done = generate._hop(
            request_id, parsed, journey_id(request_id, SIMPLE), kwargs["journey"], "ollama"
        )
        assert isinstance(done, visit.Done), done
        _celery_hop_end(pool, meters, request_id, done.result, Context(id=request_id))
        left = OUTBOX.task_ended()
        if left:
            usage_log().push(left)
    meters.end_run()


def plain_request(meters: Meters, plain: Any) -> None:
    """What plain Celery's hop pays of the same steps (its result dict, write, events, log)."""
    from bench.sdk_calls import call_ollama

    request_id = str(uuid.uuid4())
    with meters.step("re-dispatch message (Task.replace)"):
        plain.amqp.as_task_v2(
            request_id, "plain.generate", kwargs={"request": SIMPLE, "second": True}
        )
    _events(meters, plain)
    with meters.step("call (SDK to the simulator)"):
        call_ollama()
    with meters.step("result dict"):
        answer = {"status": "ok", "provider": "ollama"}
    with meters.step("result write"):
        plain.backend.store_result(request_id, answer, "SUCCESS")
    _events(meters, plain)
    meters.end_run()


_SINK = logging.getLogger("bench.costs.sink")


def _celery_hop_end(
    pool: Pool, meters: Meters, request_id: str, answer: Any, context: Any = None
) -> None:
    """What Celery does around a hop of the pool: result write, task events, its log line."""
    if answer is not None:
        with meters.step("result write"):
            pool.app.backend.store_result(request_id, answer, "SUCCESS", request=context)
    _events(meters, pool.app)
    with meters.step("Celery's log line (scrubbed)"):
        _SINK.info("Task %s[%s] succeeded in %ss", "ai.generate", request_id, 0.01)


_DISPATCHERS: dict[int, Any] = {}


def _events(meters: Meters, app: Any) -> None:
    # One dispatcher per app for the whole run, as a worker keeps one.
    dispatcher = _DISPATCHERS.get(id(app))
    if dispatcher is None:
        dispatcher = _DISPATCHERS[id(app)] = app.events.Dispatcher(
            app.connection_for_write(), enabled=True
        )
    with meters.step("task events (3 per hop)"):
        for kind in ("task-received", "task-started", "task-succeeded"):
            dispatcher.send(kind, uuid=str(uuid.uuid4()), name="ai.generate")


def _quiet_logging() -> None:
    """Log lines formatted into memory, each record scrubbed as it is made, as a worker's are."""
    from aipool import log_guard

    # A worker scrubs every record as it is made (workers.signals installs the same factory).
    log_guard.install()
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(
        logging.Formatter("[%(asctime)s: %(levelname)s/%(processName)s] %(message)s")
    )
    for name in ("aipool.hop", "bench.costs.sink"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(logging.INFO)
        logger.propagate = False


def profile(pool: Pool, runs: int) -> dict[str, Any]:
    """The cost table: each step's CPU, wall time and round trips, for the pool and plain Celery."""
    from bench.plain_app import app as plain
    from bench.plain_app import configure

    configure(plain, True)
    _quiet_logging()
    pool.reset_guards("ollama", "gemini")
    pool_meters, plain_meters = Meters(), Meters()
    from aipool.harness.round_trips import counting_round_trips

    with counting_round_trips() as counter:
        _counter[0] = counter
        for _ in range(20):  # warm-up: clients, scripts, SDK
            pool_request(pool, Meters())
            plain_request(Meters(), plain)
        for _ in range(runs):
            pool_request(pool, pool_meters)
            plain_request(plain_meters, plain)
    rows = []
    for name, who in STEPS:
        mine = pool_meters.by_step[name].row() if name in pool_meters.by_step else None
        theirs = plain_meters.by_step[name].row() if name in plain_meters.by_step else None
        rows.append({"step": name, "paid_by": who, "pool": mine, "plain": theirs})
    return {"runs": runs, "rows": rows}


def print_table(table: dict[str, Any], out: Any) -> None:
    """The cost table as text: one request by name (two hops), per step."""
    print(
        f"\nCost of one request by name (router hop + ollama hop), medians of {table['runs']} "
        "runs in the bench process",
        file=out,
    )
    head = f"{'step':38} {'pool CPU µs':>11} {'wall µs':>8} {'RTs':>5}   {'plain CPU µs':>12} {'RTs':>5}   paid by"
    print(head, file=out)
    totals = {"pool": [0.0, 0.0], "plain": [0.0, 0.0]}
    for row in table["rows"]:
        mine, theirs = row["pool"], row["plain"]
        cpu, wall, trips = ("-", "-", "-")
        pcpu, ptrips = ("-", "-")
        if mine is not None:
            totals["pool"][0] += mine["cpu_us"]
            totals["pool"][1] += mine["round_trips"]
            cpu = f"{mine['cpu_us']:.0f}"
            wall = f"{mine['wall_us']:.0f}"
            trips = f"{mine['round_trips']:.1f}"
        if theirs is not None:
            totals["plain"][0] += theirs["cpu_us"]
            totals["plain"][1] += theirs["round_trips"]
            pcpu = f"{theirs['cpu_us']:.0f}"
            ptrips = f"{theirs['round_trips']:.1f}"
        print(
            f"{row['step']:38} {cpu:>11} {wall:>8} {trips:>5}   {pcpu:>12} {ptrips:>5}   {row['paid_by']}",
            file=out,
        )
    print(
        f"{'total':38} {totals['pool'][0]:>11.0f} {'':>8} {totals['pool'][1]:>5.1f}   "
        f"{totals['plain'][0]:>12.0f} {totals['plain'][1]:>5.1f}",
        file=out,
    )


def round_trips_with_workers(pool: Pool, n: int) -> dict[str, dict[str, float]]:
    """Redis commands per request sent by real workers and producers (Redis's MONITOR), for the
    pool and plain Celery, task events on and off."""
    from bench import plain as plain_side
    from bench.profile import commands_sent, count_each
    from tasks.client import submit

    kinds: dict[str, Callable[[], Any]] = {
        "pool by name": lambda: by_name(pool, SIMPLE),
        "plain Celery, 2 hops": lambda: plain_side.plain_request(2),
        "pool submit()": lambda: submit(SIMPLE, app=pool.app).get(timeout=30),
        "plain Celery, 1 hop": lambda: plain_side.plain_request(1),
    }
    found: dict[str, dict[str, float]] = {}
    for events in (False, True):
        with plain_side.side_by_side(pool, 1, events):
            for kind, counted in count_each(pool, kinds, n).items():
                sent = commands_sent(counted)
                found[f"{kind}, {plain_side.mode_name(events)}"] = {"sent": sent, **counted}
    return found


def print_round_trips(found: dict[str, dict[str, float]], out: Any) -> None:
    """Commands sent per request (a transaction counts once), and the commands of each kind."""
    print("\nRedis commands sent per request by real workers and producers (MONITOR)", file=out)
    for kind, counted in found.items():
        detail = ", ".join(
            f"{name} {count:.1f}"
            for name, count in counted.items()
            if name != "sent" and not name.startswith(("lua: ", "in MULTI: "))
        )
        print(f"  {counted['sent']:6.1f}  {kind}: {detail}", file=out)
