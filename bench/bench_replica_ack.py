"""What waiting for a replica costs a write that decides a paid call (aipool/redis/durability.py).

Run: ``.venv/bin/python -m bench.bench_replica_ack`` (``BENCH_ROUNDS`` rounds per figure). Starts
its own master and replica (``redis-server`` on free loopback ports, append-only files in a
temporary directory, removed afterwards) and measures, in the same run, p50/p99 in microseconds:
a PING; the pool's quota reservation script alone (one EVALSHA, the size of write ``begin`` and
``finish`` make); the same script with ``WAIT 1`` in its pipeline (what
:func:`~aipool.redis.durability.run_acknowledged` sends); the script and a ``WAIT`` as a second
round trip (what a WAIT beside the script would cost); and, with the replica stopped, the
acknowledged write, which waits out its timeout.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from aipool.quota import Quota
from aipool.quota.storage import RESERVE
from aipool.redis.durability import ReplicaAcks, run_acknowledged
from aipool.settings.provider_limits import QuotaLimits
from bench.bench_guards import ROUNDS, measure

#: Limits high enough that nothing is refused: the benchmark measures the write, not a refusal.
ROOMY = QuotaLimits(
    rpm=10_000_000, daily_requests=10**9, daily_tokens=10**12, monthly_tokens=10**13
)
ONE = ReplicaAcks(replicas=1, timeout_s=0.1)
#: Rounds measured while no replica can answer: each waits out the timeout.
ROUNDS_WITHOUT_REPLICA = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _server(directory: Path, port: int, *extra: str) -> subprocess.Popen[bytes]:
    directory.mkdir()
    process = subprocess.Popen(
        [
            shutil.which("redis-server") or "redis-server",
            "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory),
            "--save", "", "--appendonly", "yes", "--appendfsync", "everysec", *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = redis.Redis(port=port)
    for _ in range(100):
        try:
            client.ping()
            return process
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError(f"redis-server on {port} did not start")


@dataclass(frozen=True)
class Replicated:
    """A master and one replica on loopback, the replica caught up: ``client`` is on the master."""

    client: redis.Redis[Any]
    master_port: int
    replica_port: int
    replica: subprocess.Popen[bytes]


@contextmanager
def master_and_replica(prefix: str) -> Iterator[Replicated]:
    """Start a master and its replica (append-only files in a temporary directory named with
    ``prefix``), wait until the replica is linked, and stop both and remove the directory after."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    master_port, replica_port = _free_port(), _free_port()
    master = _server(root / "master", master_port)
    replica = _server(root / "replica", replica_port, "--replicaof", "127.0.0.1", str(master_port))
    client = redis.Redis(port=master_port)
    try:
        while redis.Redis(port=replica_port).info("replication")["master_link_status"] != "up":
            time.sleep(0.05)
        yield Replicated(client, master_port, replica_port, replica)
    finally:
        client.close()
        for process in (replica, master):
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    with master_and_replica("aipool-bench-replica-") as pair:
        quota = Quota(pair.client, "bench-replica", ROOMY)
        store = quota.store
        script = pair.client.register_script(RESERVE)
        run = uuid.uuid4().hex[:8]
        counter = iter(range(10**9))

        def reservation() -> tuple[list[Any], list[Any]]:
            now = time.time()
            day, month = quota.periods(now)
            args = [
                *quota.room_args(now, 500, day, month),
                f"{run}-{next(counter)}:0",
                86400,
                86400,
            ]
            return store.keys(day.label, month.label), args

        def alone() -> Any:
            keys, args = reservation()
            return script(keys=keys, args=args)

        def acknowledged() -> Any:
            keys, args = reservation()
            return run_acknowledged(pair.client, script, keys, args, ONE)

        def then_wait() -> Any:
            keys, args = reservation()
            script(keys=keys, args=args)
            return pair.client.wait(1, ONE.timeout_ms)

        print(f"master :{pair.master_port}, replica :{pair.replica_port}, rounds={ROUNDS}")
        print(f"{'step':<58} {'p50 µs':>9} {'p99 µs':>9}")
        for name, step in (
            ("redis PING round trip", pair.client.ping),
            ("quota reservation script (EVALSHA)", alone),
            ("the same + WAIT 1 in its pipeline (run_acknowledged)", acknowledged),
            ("the same, then WAIT 1 as a second round trip", then_wait),
        ):
            p50, p99 = measure(step)
            print(f"{name:<58} {p50:>9.1f} {p99:>9.1f}")
        pair.replica.terminate()
        pair.replica.wait(timeout=10)
        p50, p99 = measure(acknowledged, ROUNDS_WITHOUT_REPLICA)
        name = f"acknowledged, replica down (timeout {ONE.timeout_ms} ms)"
        print(f"{name:<58} {p50:>9.1f} {p99:>9.1f}")


if __name__ == "__main__":
    main()
