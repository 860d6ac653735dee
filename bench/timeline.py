"""One request at a time through a delaying proxy: the Redis commands on a request's path, laid
out in time for ``submit()`` and for plain Celery's one hop side by side (issue #44).

Run: ``.venv/bin/python -m bench.timeline [--n 30] [--events] [--delay-ms 0.5] [--show 1]``.
Starts the simulator, one pool worker and one plain Celery worker (``-c 1`` each), both with
every Redis connection through :mod:`bench.delay_proxy` with its log on, and a producer process
of its own, also through the proxy, that sends ``submit()`` and plain Celery's one hop in turn,
one at a time, a pause between, marking when each was sent and answered. Each proxy connection
is put to its process (``ss``, while every process still holds its connections), and each
request's events are read between its marks.

Prints the kinds side by side, phase by phase (:data:`MARKS`): the median ms of each phase, and
the Redis writes (each held ``delay``) made in it per request, by process and command; then the
timeline of the request of each kind nearest its median, one line per event: ms since the call,
the process, the connection, the event and its commands.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.latency import TIMEOUT_S

#: The pause between two requests, so the workers' work after an answer (acks, events) never
#: falls in the next request's window.
PAUSE_S = 0.05


@dataclass(frozen=True)
class Event:
    """One line of the proxy's log."""

    at: float
    connection: int
    kind: str
    detail: str


def read_log(path: Path) -> list[Event]:
    """The proxy log's events, in time order."""
    events = []
    for line in path.read_text().splitlines():
        if line.count("\t") < 2:
            continue  # the last line, cut when the proxy stopped
        at, connection, kind, *detail = line.split("\t")
        events.append(Event(float(at), int(connection), kind, "\t".join(detail)))
    return sorted(events, key=lambda event: event.at)


def produce(n: int, events: bool) -> dict[str, Any]:
    """In a producer process whose Redis is the proxy: ``n`` of each kind, one at a time, with
    their marks; then which process holds each TCP connection of the machine (``ss``)."""
    from bench.bare_app import app
    from bench.latency import SIMPLE
    from bench.plain import plain_request
    from bench.plain_app import app as plain
    from bench.plain_app import configure
    from tasks.client import submit

    configure(plain, events)
    app.conf.task_send_sent_event = events
    kinds: dict[str, Callable[[], Any]] = {
        "submit": lambda: submit(SIMPLE, app=app).get(timeout=TIMEOUT_S),
        "plain_1hop": lambda: plain_request(1),
    }
    for call in kinds.values():
        for _ in range(10):
            call()
    marks: list[tuple[str, float, float]] = []
    for _ in range(n):
        for kind, call in kinds.items():
            time.sleep(PAUSE_S)
            started = time.perf_counter()
            call()
            marks.append((kind, started, time.perf_counter()))
    sockets = subprocess.run(["ss", "-tnpH"], capture_output=True, text=True).stdout
    return {"pid": os.getpid(), "marks": marks, "sockets": sockets}


def owners(sockets: str, proxy_port: int) -> dict[str, int]:
    """The pid holding each client end (``host:port``) of a connection to the proxy, from
    ``ss -tnpH``'s output."""
    found: dict[str, int] = {}
    for line in sockets.splitlines():
        fields = line.split()
        if len(fields) < 6 or not fields[4].endswith(f":{proxy_port}"):
            continue
        pid = re.search(r"pid=(\d+)", line)
        if pid:
            found[fields[3]] = int(pid.group(1))
    return found


def role(pid: int, producer: int) -> str:
    """A process's part: the producer, or a worker's parent (its consumer) or pool process."""
    if pid == producer:
        return "producer"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        parent = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        parent_command = Path(f"/proc/{parent}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return f"pid {pid}"
    side = "pool" if "bare_app" in command else "plain" if "plain_app" in command else "?"
    part = "child" if "celery" in parent_command else "parent"
    return f"{side} {part}"


def timeline(events: list[Event], started: float, ended: float, names: dict[int, str]) -> list[str]:
    """One line per event between ``started`` and ``ended``: ms since ``started``, the
    connection's process and id, the event and what it carried."""
    lines = []
    for event in events:
        if started <= event.at <= ended and event.kind != "sent":
            lines.append(
                f"{(event.at - started) * 1000:7.2f}  {names.get(event.connection, '?'):13}"
                f" c{event.connection:<3} {event.kind:5} {event.detail}"
            )
    return lines


def writes(
    events: list[Event], started: float, ended: float, names: dict[int, str]
) -> Counter[str]:
    """The client writes (each held ``delay``) between ``started`` and ``ended``, by process and
    command."""
    counted: Counter[str] = Counter()
    for event in events:
        if started <= event.at <= ended and event.kind == "hold":
            commands = event.detail.split("\t", 1)[-1]
            counted[f"{names.get(event.connection, '?')}: {_shape(commands)}"] += 1
    return counted


def _shape(commands: str) -> str:
    # A command's name and script, without the task id or the journey id in its key.
    shaped = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "<id>", commands)
    return re.sub(r"[0-9a-f]{32}", "<journey>", shaped)


#: The marks a request's path passes, in order, each found in its window of the log: the phase
#: before a mark ends at it. Task events on: the worker's parent publishes the task-started event
#: when its pool process has taken the task, which splits the worker's part in two.
MARKS = ("sent", "delivered", "started", "answered")


def anchors(
    events: list[Event], started: float, ended: float, names: dict[int, str]
) -> dict[str, float]:
    """When a request (sent at ``started``, answered at ``ended``) passed each of :data:`MARKS`:
    its message written (the producer's ``LPUSH``), taken by the worker (``BRPOP``'s answer), its
    task started (the parent's second event ``PUBLISH`` after it took the message), its answer
    published (the pub/sub message on the producer's result subscription); ``start`` and
    ``end`` beside them. A mark not found is left out."""
    found = {"start": started, "end": ended}
    parent_events = 0
    for event in events:
        if not started <= event.at <= ended:
            continue
        name = names.get(event.connection, "?")
        commands = event.detail.split("\t", 1)[-1]
        if name == "producer" and event.kind == "hold" and commands.startswith("LPUSH"):
            found.setdefault("sent", event.at)
        elif name.endswith("parent") and event.kind == "back" and commands.startswith("* "):
            if "sent" in found:
                found.setdefault("delivered", event.at)
        elif name.endswith("parent") and event.kind == "hold" and "celeryev" in commands:
            if "delivered" in found:
                parent_events += 1
                if parent_events == 2:
                    found.setdefault("started", event.at)
        elif (
            name == "producer"
            and event.kind == "back"
            and commands == "> message"
            and "delivered" in found
            and int(event.detail.split("\t", 1)[0]) > 200  # a result, not a subscription's
        ):
            found["answered"] = event.at
    return found


def phases(found: dict[str, float]) -> dict[str, float]:
    """The ms between consecutive marks of ``found`` (:func:`anchors`), named ``a → b``."""
    order = [mark for mark in ("start", *MARKS, "end") if mark in found]
    return {f"{a} → {b}": (found[b] - found[a]) * 1000 for a, b in itertools.pairwise(order)}


def run(n: int, events: bool, delay_ms: float, show: int, keep: Path | None = None) -> None:
    from urllib.parse import urlsplit, urlunsplit

    from bench import delay_proxy
    from bench.environment import BENCH_REDIS_URL, prepare
    from bench.plain import side_by_side

    pool = prepare(quick=True)
    direct = urlsplit(BENCH_REDIS_URL)
    log = keep or Path(tempfile.mkdtemp()) / "proxy.log"
    try:
        with delay_proxy.started(f"{direct.hostname}:{direct.port or 6379}", delay_ms, log) as port:
            url = urlunsplit(direct._replace(netloc=f"{direct.hostname}:{port}"))
            env = {"REDIS_URL": url, "CELERY_BROKER_URL": url, "CELERY_RESULT_BACKEND": url}
            with side_by_side(pool, 1, events, env=env):
                done = subprocess.run(
                    [sys.executable, "-m", "bench.timeline", "--produce", "--n", str(n)]
                    + (["--events"] if events else []),
                    env=pool.worker_env(**env),
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=120 + 4 * n * TIMEOUT_S,
                )
                found = json.loads(done.stdout.strip().splitlines()[-1])
                pids = owners(found["sockets"], port)
                roles = {address: role(pid, found["pid"]) for address, pid in pids.items()}
        report(read_log(log), found["marks"], roles, show)
    finally:
        pool.simulator.stop()
        pool.redis.flushdb()


def by_phase(
    events: list[Event], requests: list[tuple[float, float]], names: dict[int, str]
) -> tuple[dict[str, list[float]], dict[str, Counter[str]]]:
    """Over ``requests`` (their start and end): the ms each spent in each phase
    (:func:`phases`), and the client writes made in each phase, by process and command."""
    spent: dict[str, list[float]] = {}
    made: dict[str, Counter[str]] = {}
    for start, end in requests:
        found = anchors(events, start, end, names)
        for phase, ms in phases(found).items():
            spent.setdefault(phase, []).append(ms)
        order = sorted(found.items(), key=lambda item: item[1])
        for (a, since), (b, until) in itertools.pairwise(order):
            made.setdefault(f"{a} → {b}", Counter()).update(writes(events, since, until, names))
    return spent, made


def report(events: list[Event], marks: list[list[Any]], roles: dict[str, str], show: int) -> None:
    """Print the kinds side by side, phase by phase (median ms; writes per request by process
    and command), then ``show`` timelines of each kind near its median."""
    names = {
        event.connection: roles.get(event.detail, "gone")
        for event in events
        if event.kind == "open"
    }
    kinds = list(dict.fromkeys(mark[0] for mark in marks))
    requests = {
        kind: [(start, end) for name, start, end in marks if name == kind] for kind in kinds
    }
    split = {kind: by_phase(events, requests[kind], names) for kind in kinds}
    medians = {
        kind: statistics.median(end - start for start, end in requests[kind]) * 1000
        for kind in kinds
    }
    print(f"{'phase':24}" + "".join(f"{kind + ' ms':>16}" for kind in kinds))
    print(f"{'whole request (p50)':24}" + "".join(f"{medians[kind]:16.2f}" for kind in kinds))
    for phase in split[kinds[0]][0]:
        cells = [split[kind][0].get(phase) for kind in kinds]
        print(
            f"{phase:24}"
            + "".join(
                f"{statistics.median(cell):16.2f}" if cell else f"{'-':>16}" for cell in cells
            )
        )
        for kind in kinds:
            made = split[kind][1].get(phase, Counter())
            for what, count in sorted(made.items()):
                print(f"{'':28}{kind}: {count / len(requests[kind]):4.2f}  {_shape(what)}")
    for kind in kinds:
        nearest = sorted(requests[kind], key=lambda r: abs((r[1] - r[0]) * 1000 - medians[kind]))
        for start, end in nearest[:show]:
            print(f"\n-- {kind}, one request: {(end - start) * 1000:.2f} ms")
            print("\n".join(timeline(events, start, end, names)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30)
    parser.add_argument("--events", action="store_true")
    parser.add_argument("--delay-ms", type=float, default=0.5)
    parser.add_argument("--show", type=int, default=1)
    parser.add_argument("--log", type=Path, help="keep the proxy's log here")
    parser.add_argument("--produce", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.produce:
        print(json.dumps(produce(args.n, args.events)), flush=True)
        return
    run(args.n, args.events, args.delay_ms, args.show, args.log)


if __name__ == "__main__":
    main()
