"""Round trip of ai.generate against a bare Celery no-op task, same broker, same worker, one run.

Starts the simulated providers and one real worker (concurrency 1, all queues), then times
sequential round trips (send → result) of:
  - ``ai.ping``: a bare no-op task (the floor Celery + Redis set on this machine);
  - ``submit()``: a request routed in the producer, answered by an instant simulated Ollama;
  - ``send_task("ai.generate")`` by name: one extra hop through the ``router`` queue.
Run: ``python bench/bench_roundtrip.py [--n 300]`` (REDIS_URL defaults to redis://127.0.0.1:6379/10).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/10")

from aipool.simulator import Simulator  # noqa: E402
from tests.support.pool import Worker  # noqa: E402


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(n: int, call: Callable[[], object]) -> list[float]:
    for _ in range(20):  # warm-up: connections, imports, SDK clients
        call()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    with Simulator() as sim:
        os.environ["OLLAMA_BASE_URL"] = sim.base_urls["ollama"]
        import redis

        redis.Redis.from_url(os.environ["REDIS_URL"]).flushdb()
        from tasks.client import submit
        from workers.app import app

        worker = Worker(dict(os.environ), concurrency=1)
        try:
            worker.wait_ready(app)
            request = {"prompt": "What is a pod?"}
            rows = {
                "bare Celery no-op (ai.ping)": measure(
                    args.n, lambda: app.send_task("ai.ping", queue="ollama").get(timeout=30)
                ),
                "ai.generate via submit() → ollama": measure(
                    args.n, lambda: submit(request).get(timeout=30)
                ),
                "ai.generate by name → router → ollama": measure(
                    args.n,
                    lambda: app.send_task("ai.generate", kwargs={"request": request}).get(
                        timeout=30
                    ),
                ),
            }
        finally:
            worker.stop()
    base = statistics.median(rows["bare Celery no-op (ai.ping)"])
    print(f"\nround trip, n={args.n} sequential requests, one worker (concurrency 1), Redis broker")
    print(f"{'path':<42}{'p50 ms':>9}{'p99 ms':>9}{'p50 / no-op':>13}")
    for name, samples in rows.items():
        p50 = statistics.median(samples)
        print(f"{name:<42}{p50:>9.2f}{percentile(samples, 0.99):>9.2f}{p50 / base:>12.1f}x")


if __name__ == "__main__":
    main()
