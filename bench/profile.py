"""Where a hop's time goes: py-spy samples a worker while it serves one kind of request.

Run: ``.venv/bin/python -m bench.profile [--n 300] [--path by_name|submit|bare_2hop|bare_1hop|
failover|bare_failover|skip]`` (py-spy must be installed in the virtualenv; it is not a
dependency of the project). Starts the simulator and one worker (one pool process) as ``bench/run``
does, samples the worker's parent and pool process with py-spy (``--idle``: time spent waiting on
Redis or a provider counts too) while ``n`` requests of the path run one at a time, and prints the
milliseconds per request spent inside each function of interest, and the leaf frames that take
the most time, per process. ``--commands`` counts the Redis commands per request instead (MONITOR),
and ``--server`` Redis's own time per request by command (SLOWLOG); neither needs py-spy.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: (label, substring of a py-spy frame). A frame reads "function (path/to/file.py:line)".
INTERESTING = (
    ("ai.generate task body", "generate (tasks/generate.py"),
    ("decide (routing)", "decide (aipool/routing/router.py"),
    ("parse_request", "parse_request (aipool/contract/request.py"),
    ("HopRunner.start (route record)", "start (aipool/attempt/runner.py"),
    ("HopRunner.run", "run (aipool/attempt/runner.py"),
    ("attempt script (begin, finish, advance)", "_run (aipool/attempt/lifecycle.py"),
    ("provider call (adapter)", "complete (aipool/providers/"),
    ("hop records (ledger, metrics, log)", "_observe (aipool/attempt/records.py"),
    ("result dict", "answered (aipool/contract/result.py"),
    ("Task.replace", "replace (celery/app/task.py"),
    ("backend store_result", "store_result (celery/backends/base.py"),
    ("send task events", "send (celery/events/dispatcher.py"),
    ("logging", "(logging/__init__.py"),
    ("redis-py command round trips", "execute_command (redis/client.py"),
    ("kombu publish", "publish (kombu/messaging.py"),
    ("bare hop body", "hop (bench/bare_app.py"),
)


def _paths(pool: Any) -> dict[str, Callable[[], Any]]:
    from bench.latency import SIMPLE, bare, by_name
    from tasks.client import submit

    return {
        "by_name": lambda: by_name(pool, SIMPLE),
        "submit": lambda: submit(SIMPLE, app=pool.app).get(timeout=30),
        "bare_2hop": lambda: bare(pool, "router", ["ollama"]),
        "bare_1hop": lambda: bare(pool, "ollama", []),
        "failover": lambda: by_name(pool, SIMPLE),
        "bare_failover": lambda: bare(pool, "router", ["ollama", "gemini"]),
        "skip": lambda: by_name(pool, SIMPLE),
    }


def count_commands(pool: Any, run: Callable[[], None], requests: int) -> dict[str, float]:
    """Redis commands per request on the bench database while ``run`` runs, from Redis's MONITOR
    feed: round trips by command name, and the commands Lua scripts ran (``lua: NAME``). The
    bench's own bookkeeping connection (resetting breakers between requests) is left out."""
    import threading

    import redis

    from bench.environment import BENCH_REDIS_URL

    db = int(BENCH_REDIS_URL.rsplit("/", 1)[1] or 0)
    own = str(pool.redis.client_info().get("addr", ""))
    counts: Counter[str] = Counter()
    stop = threading.Event()
    ready = threading.Event()
    scripts = _script_names()
    in_multi: set[str] = set()

    def listen() -> None:
        client = redis.Redis.from_url(BENCH_REDIS_URL)
        with client.monitor() as feed:
            ready.set()
            for event in feed.listen():
                if stop.is_set():
                    return
                if event.get("db") != db:
                    continue
                if f"{event.get('client_address')}:{event.get('client_port')}" == own:
                    continue
                name = _command_name(event["command"].split(" "), scripts)
                sender = f"{event.get('client_address')}:{event.get('client_port')}"
                if event.get("client_type") == "lua":
                    name = f"lua: {name}"
                elif name == "MULTI":
                    # A transaction is one pipeline, one round trip: its EXEC counts it.
                    in_multi.add(sender)
                    continue
                elif name == "EXEC":
                    in_multi.discard(sender)
                elif sender in in_multi:
                    name = f"in MULTI: {name}"
                counts[name] += 1

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(5)
    time.sleep(0.2)
    run()
    time.sleep(0.5)
    stop.set()
    pool.redis.ping()  # one more event so the listener sees the stop
    thread.join(5)
    return {name: count / requests for name, count in counts.most_common()}


def count_each(
    pool: Any, kinds: dict[str, Callable[[], Any]], n: int
) -> dict[str, dict[str, float]]:
    """:func:`count_commands` for each kind of request: 5 sent untimed first, then ``n``."""
    found: dict[str, dict[str, float]] = {}
    for kind, call in kinds.items():
        for _ in range(5):
            call()

        def run_all(call: Callable[[], Any] = call) -> None:
            for _ in range(n):
                call()

        found[kind] = count_commands(pool, run_all, n)
    return found


def commands_sent(counted: dict[str, float]) -> float:
    """Of :func:`count_commands`' counts, the commands a client sent (not those a script ran,
    nor those inside a transaction, which its ``EXEC`` counts)."""
    return sum(v for k, v in counted.items() if not k.startswith(("lua: ", "in MULTI: ")))


def _command_name(words: list[str], scripts: dict[str, str]) -> str:
    """A command's name, and for ``EVALSHA`` the script's name and op (the attempt script's first
    argument after its keys names its op)."""
    words = [w.strip('"') for w in words]
    name = words[0].upper() if words else "?"
    if name == "EVALSHA" and len(words) > 2:
        keys = int(words[2]) if words[2].isdigit() else 0
        op = words[3 + keys] if len(words) > 3 + keys else ""
        script = scripts.get(words[1], words[1][:8])
        name = f"EVALSHA {script} {op}" if op.isalpha() else f"EVALSHA {script}"
    return name


def server_time(pool: Any, run: Callable[[], None], requests: int) -> dict[str, Any]:
    """Redis's own time per request while ``run`` runs, by command, from its SLOWLOG (every
    command logged, for the run only; the server's settings are restored after). Time Redis
    spends on a script is CPU the workers compete with on a small host, though no round trip."""
    client = pool.redis
    before = client.config_get("slowlog-*")
    own = str(client.client_info().get("addr", ""))
    try:
        client.config_set("slowlog-max-len", 1_000_000)
        client.config_set("slowlog-log-slower-than", 0)
        client.slowlog_reset()
        run()
        entries = client.slowlog_get(1_000_000)
    finally:
        for name, value in before.items():
            client.config_set(name, value)
    return _server_summary(entries, requests, _script_names(), own)


def _server_summary(
    entries: list[dict[str, Any]], requests: int, scripts: dict[str, str], own: str
) -> dict[str, Any]:
    """µs per request and median µs per call of each command in SLOWLOG ``entries``, leaving out
    the bench's own connection ``own`` (host:port) and the SLOWLOG commands themselves. A command
    a script runs is logged on its own too (from client ``?:0``): it is listed as ``in scripts:
    NAME`` and left out of the total, as its script's time holds it."""
    calls: dict[str, list[float]] = {}
    for entry in entries:
        address = _text(entry.get("client_address", ""))
        if own and address == own:
            continue
        name = _command_name(_text(entry["command"]).split(), scripts)
        if name in ("SLOWLOG", "CONFIG"):
            continue
        if address == "?:0":
            name = f"in scripts: {name}"
        calls.setdefault(name, []).append(float(entry["duration"]))
    by_command = {
        name: {
            "us_per_request": sum(times) / requests,
            "calls_per_request": len(times) / requests,
            "median_us": sorted(times)[len(times) // 2],
        }
        for name, times in sorted(calls.items(), key=lambda kv: -sum(kv[1]))
    }
    return {
        "us_per_request": sum(
            v["us_per_request"] for k, v in by_command.items() if not k.startswith("in scripts: ")
        ),
        "by_command": by_command,
    }


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _script_names() -> dict[str, str]:
    """The pool's Lua scripts by SHA, named as their package names them."""
    import hashlib

    import workers.result_backend  # noqa: F401  (registers its script)
    from aipool.attempt import lifecycle  # noqa: F401
    from aipool.redis.lua import _ALL

    return {
        hashlib.sha1(body.encode()).hexdigest(): name
        for scripts in _ALL
        for name, body in scripts._sources.items()
    }


def _aggregate(raw: Path, requests: int, rate: int) -> dict[str, Any]:
    inclusive: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    per_pid: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        total += count
        per_pid[_process(frames[0]) if frames else "?"] += count
        for label, needle in INTERESTING:
            if any(needle in frame for frame in frames):
                inclusive[label] += count
        leaves[_short(frames[-1])] += count
    per_request = 1000 / rate / requests
    return {
        "total_ms_per_request": total * per_request,
        "inclusive": {k: v * per_request for k, v in inclusive.most_common()},
        "leaves": {k: v * per_request for k, v in leaves.most_common(25)},
        "processes": {k: v * per_request for k, v in per_pid.most_common()},
    }


def _process(frame: str) -> str:
    # py-spy names the process in the first frame: 'process 123:"python -m celery ..."'.
    head, _, command = frame.partition(":")
    return (
        f"{head} ({'pool process' if 'fork' in command or 'billiard' in command else command[:40]})"
    )


def _short(frame: str) -> str:
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", "python3.11/", "/work/main/"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where.rsplit(':', 1)[0]})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--path", default="by_name")
    parser.add_argument("--rate", type=int, default=500, help="samples per second")
    parser.add_argument(
        "--commands", action="store_true", help="count Redis commands per request instead"
    )
    parser.add_argument(
        "--cpu", action="store_true", help="sample running code only (no --idle): CPU time"
    )
    parser.add_argument(
        "--server", action="store_true", help="Redis's own time per request instead (SLOWLOG)"
    )
    parser.add_argument("--raw", type=Path, help="keep py-spy's raw stacks in this file")
    args = parser.parse_args()
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None and not (args.commands or args.server):
        raise SystemExit("py-spy is not installed: .venv/bin/pip install py-spy")
    from bench.environment import prepare

    pool = prepare(quick=True)
    try:
        with pool.workers(1, concurrency=1) as (worker,):
            call = _paths(pool)[args.path]
            before: Callable[[], Any] = lambda: None  # noqa: E731
            if args.path in ("failover", "bare_failover"):
                pool.simulator.set_fault("ollama", "error_500")
                before = lambda: pool.reset_guards("ollama")  # noqa: E731
            pool.warm("ollama", "gemini", copies=2)
            for _ in range(20):
                before()
                call()
            if args.path == "skip":
                from bench.latency import _open_breaker

                _open_breaker(pool)

            def run_all() -> None:
                for _ in range(args.n):
                    before()
                    call()

            if args.server:
                summary = server_time(pool, run_all, args.n)
                print(
                    f"path {args.path}: Redis's own time per request (SLOWLOG, {args.n} requests)"
                )
                print(f"  {summary['us_per_request']:8.1f}  µs in all")
                for name, row in summary["by_command"].items():
                    print(
                        f"  {row['us_per_request']:8.1f}  µs  {row['calls_per_request']:5.2f} calls"
                        f"  median {row['median_us']:6.1f} µs  {name}"
                    )
                return
            if args.commands:
                per_request = count_commands(pool, run_all, args.n)
                trips = sum(
                    v for k, v in per_request.items() if not k.startswith(("lua: ", "in MULTI: "))
                )
                print(f"path {args.path}: Redis commands per request on the bench database")
                print(
                    f"  {trips:8.2f}  commands sent (a MULTI/EXEC transaction counts once; MONITOR"
                )
                print("            cannot see plain pipelines, whose commands count one each), and")
                print(f"  {sum(per_request.values()) - trips:8.2f}  commands inside them or Lua")
                for name, count in per_request.items():
                    print(f"  {count:8.2f}  {name}")
                return
            # Checked before the pool was prepared; only --commands (returned above) runs without.
            assert spy is not None
            out = Path(tempfile.mkdtemp()) / "profile.txt"
            spy_process = subprocess.Popen(
                [
                    spy,
                    "record",
                    *([] if args.cpu else ["--idle"]),
                    *("--nonblocking", "--subprocesses", "-r", str(args.rate), "-f", "raw"),
                    *("-o", str(out), "-p", str(worker.pid)),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)  # py-spy attaches
            started = time.perf_counter()
            for _ in range(args.n):
                before()
                call()
            took = (time.perf_counter() - started) * 1000 / args.n
            spy_process.send_signal(2)
            spy_process.wait(timeout=60)
        summary = _aggregate(out, args.n, args.rate)
    finally:
        pool.simulator.stop()
        pool.redis.flushdb()
    print(f"path {args.path}: {args.n} requests, {took:.2f} ms each (round trip, producer side)")
    print(f"worker samples: {summary['total_ms_per_request']:.2f} ms per request (both processes,")
    print("idle waits included: a process waiting for work also counts, see 'processes')")
    for section in ("processes", "inclusive", "leaves"):
        print(f"\n{section} (ms per request)")
        for name, ms in summary[section].items():
            print(f"  {ms:8.3f}  {name}")
    if args.raw:
        shutil.move(out, args.raw)
    else:
        os.remove(out)


if __name__ == "__main__":
    main()
