"""Routing cost per request over the labelled set: classify, score, and the full decide.

Run: ``.venv/bin/python bench/bench_routing.py [--repeat N]``. Prints p50 and p99 in microseconds.
Requests are parsed once up front; the route table is loaded once (``decide`` reuses the cached
table, as it does in a worker).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aipool.contract import Request, parse_request
from aipool.routing.complexity import score
from aipool.routing.intent import classify
from aipool.routing.router import decide

LABELLED = Path(__file__).resolve().parents[1] / "tests/aipool/routing/labelled_requests.jsonl"


def _requests() -> list[Request]:
    with LABELLED.open(encoding="utf-8") as handle:
        return [parse_request(json.loads(line)["request"]) for line in handle if line.strip()]


def _timings(fn: Callable[[Request], Any], requests: list[Request], repeat: int) -> list[float]:
    samples = []
    clock = time.perf_counter_ns
    for _ in range(repeat):
        for request in requests:
            started = clock()
            fn(request)
            samples.append((clock() - started) / 1000)
    return samples


def _percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def main() -> None:
    """Time each stage and print one line per stage."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=200, help="passes over the labelled set")
    args = parser.parse_args()
    requests = _requests()
    for request in requests:  # warm-up: regex caches, the route table cache
        decide(request)
    print(f"{len(requests)} requests x {args.repeat} passes")
    print(f"{'stage':<10}{'p50 µs':>10}{'p99 µs':>10}{'mean µs':>10}")
    for name, fn in (("classify", classify), ("score", score), ("decide", decide)):
        samples = _timings(fn, requests, args.repeat)
        print(
            f"{name:<10}{_percentile(samples, 50):>10.1f}{_percentile(samples, 99):>10.1f}"
            f"{statistics.fmean(samples):>10.1f}"
        )


if __name__ == "__main__":
    main()
