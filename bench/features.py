"""What the response cache and tracing cost when on (issue #45), through real workers.

``python -m bench.features [--n 200]``: one worker (``workers.app``, -c 1) serving router and
ollama, requests sent by name one at a time, kinds taking turns in blocks so the machine's noise
falls on all alike. Prints one JSON line per figure.

- cache: a route table whose QUERY rule keeps answers a day, for service ``faq`` (cache on) and
  ``quiet`` (declared, cache off). ``miss``: every request a new question of ``faq`` (look-up,
  lead, keep); ``off``: new questions of ``quiet`` (the policy says no, no Redis); ``hit``: one
  question of ``faq`` asked again and again. miss - off is what a cacheable request that misses
  pays; hit is what a repeated one costs instead of a provider's answer.
- tracing: the same ``off`` requests with the worker sending every span to a loopback OTLP/HTTP
  sink (``AIPOOL_OTLP_ENDPOINT``), against a worker without it, worker by worker in turns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.environment import Pool, prepare

ROUTES = """
[[rules]]
name = "cached_query"
intents = ["QUERY"]
provider = "ollama"
model = "llama3.2:3b"
cache_ttl_s = 86400

[[rules]]
name = "rest"
provider = "ollama"
model = "llama3.2:3b"

[services.faq]
cache = true

[services.quiet]
name = "cache off"
"""


@contextmanager
def _sink() -> Iterator[str]:
    """A loopback OTLP/HTTP endpoint that takes every export and keeps nothing."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _timed(pool: Pool, request: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = pool.app.send_task("ai.generate", kwargs={"request": request}, queue="router").get(
        timeout=30
    )
    elapsed = (time.perf_counter() - started) * 1000
    if answer["status"] != "ok":
        raise RuntimeError(f"not answered: {answer.get('error')}")
    return elapsed


def _turns(
    kinds: dict[str, Callable[[], float]], n: int, block: int = 20
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {kind: [] for kind in kinds}
    while min(len(s) for s in samples.values()) < n:
        for kind, one in kinds.items():
            one()  # the first of a block meets the other kind's leftovers: dropped
            samples[kind].extend(one() for _ in range(block - 1))
    return samples


def _p50(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def cache_figures(pool: Pool, n: int, routes: Path) -> None:
    env = {"AIPOOL_ROUTES_FILE": str(routes), "AIPOOL_CACHE_SECRET": "bench-secret"}
    asked = {"prompt": "What is a pod?", "service": "faq"}
    with pool.workers(queues=("router", "ollama"), concurrency=1, env=env):
        _timed(pool, asked)  # kept: every later one is a hit
        samples = _turns(
            {
                "off": lambda: _timed(pool, _new("quiet")),
                "miss": lambda: _timed(pool, _new("faq")),
                "hit": lambda: _timed(pool, asked),
            },
            n,
        )
    p50 = {kind: _p50(values) for kind, values in samples.items()}
    print(json.dumps({"figure": "cache p50 ms by name", **p50, "n": n}), flush=True)
    print(
        json.dumps(
            {
                "figure": "cache: added by a miss at p50 (ms)",
                "value": round(p50["miss"] - p50["off"], 3),
            }
        ),
        flush=True,
    )


def _new(service: str) -> dict[str, Any]:
    return {"prompt": f"What is a pod? ({uuid.uuid4().hex[:8]})", "service": service}


def tracing_figures(pool: Pool, n: int, routes: Path, rounds: int = 3) -> None:
    samples: dict[str, list[float]] = {"off": [], "on": []}
    base = {"AIPOOL_ROUTES_FILE": str(routes)}
    with _sink() as endpoint:
        for _ in range(rounds):
            for kind, env in (("off", base), ("on", {**base, "AIPOOL_OTLP_ENDPOINT": endpoint})):
                with pool.workers(queues=("router", "ollama"), concurrency=1, env=env):
                    _timed(pool, _new("quiet"))
                    samples[kind].extend(_timed(pool, _new("quiet")) for _ in range(n // rounds))
    p50 = {kind: _p50(values) for kind, values in samples.items()}
    print(json.dumps({"figure": "tracing p50 ms by name", **p50, "n": n}), flush=True)
    print(
        json.dumps(
            {"figure": "tracing: added at p50 (ms)", "value": round(p50["on"] - p50["off"], 3)}
        ),
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--only", default="cache,tracing")
    args = parser.parse_args(argv)
    pool = prepare(quick=False)
    routes = Path(f"/tmp/aipool-bench-routes-{uuid.uuid4().hex[:8]}.toml")
    routes.write_text(ROUTES, encoding="utf-8")
    try:
        if "cache" in args.only:
            cache_figures(pool, args.n, routes)
        if "tracing" in args.only:
            tracing_figures(pool, args.n, routes)
    finally:
        routes.unlink(missing_ok=True)
        pool.simulator.stop()
        pool.redis.flushdb()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
