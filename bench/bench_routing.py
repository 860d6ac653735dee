"""Routing cost: CPU per decision over the corpus and on 100 KB prompts, and the memory the intent
model adds to a worker.

Run: ``.venv/bin/python bench/bench_routing.py [--repeat N]``. Prints p50 and p99 of thread CPU
microseconds per stage (the keyword rules, the model, the complexity score, the whole ``decide``)
over every request of the corpus's train split, the worker's own route (``aipool.routing.recall``)
of a request its process has not decided and of one it has, then ``decide`` on ~100 KB prompts of
five shapes (``bench.cpu.PROMPTS``), then the resident memory of a fresh interpreter after ``import workers.app``
and again after the model is loaded and one request routed. Targets (issue #22): ``decide`` p50 under
1 ms for a typical prompt and under 5 ms for 100 KB; the model adds under 30 MB.
Requests are parsed up front and each timed call gets a request it has not seen (nothing is cached
across decisions but in the ``own_route, seen before`` line); the route table and model are loaded once, as in a worker.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aipool.contract.request import Request, parse_request  # noqa: E402
from aipool.routing import corpus  # noqa: E402
from aipool.routing.complexity import score  # noqa: E402
from aipool.routing.intent import classify  # noqa: E402
from aipool.routing.model import load_model  # noqa: E402
from aipool.routing.recall import CAPACITY, Recall  # noqa: E402
from aipool.routing.router import decide  # noqa: E402

TYPICAL_P50_US = 1000.0
LARGE_P50_US = 5000.0
MEMORY_MB = 30.0

_RSS_PROBE = """
import os, sys
def rss():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS')) / 1024
import workers.app
before = rss()
from aipool.routing.router import explain
explain('payments 5xx up 8%, ledger-db lag 40 s. Correlate these and find the root cause.')
after = rss()
print(f"{before:.1f} {after:.1f} {'numpy' in sys.modules}")
"""


def _requests() -> list[Request]:
    return [parse_request({"prompt": r["text"]}) for r in corpus.load("train")]


def _timings(fn: Callable[[Request], Any], requests: list[Request], repeat: int) -> list[float]:
    samples = []
    clock = time.thread_time_ns
    for _ in range(repeat):
        # Fresh copies: a request object caches its token estimate.
        for request in [parse_request({"prompt": r.last_user_text()}) for r in requests]:
            started = clock()
            fn(request)
            samples.append((clock() - started) / 1000)
    return samples


def _recall_timings(requests: list[Request], repeat: int, *, seen: bool) -> list[float]:
    """CPU of the worker's own route (:mod:`aipool.routing.recall`): of requests its process
    decided before (``seen``), or of requests new to it (its memory emptied before each pass)."""
    recall = Recall()
    if seen:
        # Within what a process keeps: a pass over more would evict each before it is asked again.
        requests = requests[: CAPACITY // 2]
    samples = []
    clock = time.thread_time_ns
    for _ in range(repeat):
        if seen:
            for request in requests:
                recall.route(request)
        else:
            recall.forget()
        for request in [parse_request({"prompt": r.last_user_text()}) for r in requests]:
            started = clock()
            recall.route(request)
            samples.append((clock() - started) / 1000)
    return samples


def _percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def _line(name: str, samples: list[float], target: float | None = None) -> None:
    p50 = _percentile(samples, 50)
    verdict = "" if target is None else ("  met" if p50 < target else "  NOT MET")
    print(
        f"{name:<24}{p50:>10.1f}{_percentile(samples, 99):>10.1f}{statistics.fmean(samples):>10.1f}{verdict}"
    )


def memory() -> None:
    """RSS of a fresh worker import, and after the model is loaded and used."""
    env = {**os.environ, "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:1/0")}
    out = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    ).stdout.split()
    before, after, numpy = float(out[0]), float(out[1]), out[2] == "True"
    growth = after - before
    verdict = "met" if growth < MEMORY_MB else "NOT MET"
    print(f"worker RSS {before:.1f} MB after import workers.app; {after:.1f} MB with the model "
          f"loaded and one request routed: +{growth:.1f} MB ({verdict}, target < {MEMORY_MB:.0f}); "
          f"numpy imported: {numpy}")  # fmt: skip


def main() -> None:
    """Time each stage and print one line per stage, then the 100 KB shapes and the memory."""
    from bench.cpu import PROMPTS

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the train split")
    args = parser.parse_args()
    requests = _requests()
    model = load_model()
    for request in requests[:50]:  # warm-up: regex caches, the route table and model caches
        decide(request)
    print(f"{len(requests)} requests x {args.repeat} passes, thread CPU µs")
    print(f"{'stage':<24}{'p50':>10}{'p99':>10}{'mean':>10}")
    _line("keyword rules", _timings(classify, requests, args.repeat))
    _line("model", _timings(lambda r: model.predict(r.last_user_text()), requests, args.repeat))
    _line("complexity", _timings(score, requests, args.repeat))
    _line("decide", _timings(decide, requests, args.repeat), TYPICAL_P50_US)
    _line("own_route, new request", _recall_timings(requests, args.repeat, seen=False))
    _line("own_route, seen before", _recall_timings(requests, args.repeat, seen=True))
    for shape, text in PROMPTS.items():
        big = [parse_request({"prompt": f"{i} {text}"}) for i in range(max(20, args.repeat * 6))]
        _line(f"decide 100 KB {shape}", _timings(decide, big, 1), LARGE_P50_US)
    memory()


if __name__ == "__main__":
    main()
