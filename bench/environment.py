"""What every pool figure runs on: Redis db 14, a ledger database, the simulated providers and real
``celery worker`` processes started from ``bench.bare_app``.

:func:`prepare` must run before anything imports ``workers.app``: Celery reads the broker URL from
the environment when its settings module is imported.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from aipool.harness.worker import Worker
from aipool.lanes import urgent_lane

BENCH_REDIS_URL = os.environ.get("AIPOOL_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
BENCH_PG_SERVER = os.environ.get(
    "AIPOOL_BENCH_PG_SERVER", "postgresql+psycopg://postgres@127.0.0.1:5432"
)
BENCH_DATABASE = os.environ.get("AIPOOL_BENCH_DATABASE", "aipool_bench")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
_ENV_FOR = {
    "ollama": "OLLAMA_BASE_URL",
    "gemini": "GEMINI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "NVIDIA_BASE_URL",
}
#: Limits high enough that nothing is refused, but set: a limited provider runs its quota scripts,
#: as Gemini and Claude do in production. Figures that need a refusal set their own.
_ROOMY = {
    "RPM": "1000000",
    "DAILY_REQUESTS": "1000000000",
    "DAILY_TOKENS": "1000000000000",
    "MONTHLY_TOKENS": "10000000000000",
}


@dataclass
class Pool:
    """The pieces a figure uses: the Celery app, the simulator and a Redis client on db 14."""

    app: Any
    simulator: Any
    redis: Any
    quick: bool

    def worker_env(self, **extra: str) -> dict[str, str]:
        """The environment of a worker process: this process's, plus ``extra``."""
        env = dict(os.environ)
        env.update(extra)
        return env

    @contextlib.contextmanager
    def workers(
        self,
        count: int = 1,
        *,
        queues: tuple[str, ...] = ("router", "ollama", "gemini"),
        concurrency: int = 1,
        env: Mapping[str, str] | None = None,
    ) -> Iterator[list[Worker]]:
        """``count`` real worker processes serving ``queues``, stopped on the way out (``env``:
        more environment for them)."""
        started: list[Worker] = []
        try:
            for _ in range(count):
                started.append(start_worker(self.worker_env(**(env or {})), queues, concurrency))
            for worker in started:
                worker.wait_ready(self.app, timeout=60)
            yield started
        finally:
            for worker in started:
                worker.stop()

    def warm(self, *providers: str, copies: int = 8) -> None:
        """Import each provider's SDK in every worker process: ``copies`` bare hops per provider
        at once, so they spread over the processes (each takes one message at a time). A cold
        process spends a second or more importing an SDK on its first call."""
        sent = [
            self.app.send_task(
                "bench.hop",
                kwargs={"queues": [provider], "call": True},
                queue="router",
                routing_key="router",
            )
            for provider in providers
            for _ in range(copies)
        ]
        for result in sent:
            result.get(timeout=120)

    def reset_guards(self, *providers: str) -> None:
        """Forget the breaker and quota state of ``providers`` (closed breakers, unused quota)."""
        for provider in providers:
            for pattern in (f"aipool:breaker:{provider}:*", f"aipool:quota:{provider}:*"):
                keys = list(self.redis.scan_iter(match=pattern, count=1000))
                if keys:
                    self.redis.delete(*keys)

    def settle(self, seconds: float = 0.3) -> None:
        """Let the workers finish what they were doing before the next figure starts."""
        time.sleep(seconds)


def lanes_of(queue: str) -> tuple[str, ...]:
    """The lanes of ``queue`` (maintenance has one): a worker that serves a queue serves both,
    since alert triage, critical and short-deadline requests wait in the urgent one."""
    return (queue,) if queue == "maintenance" else (queue, urgent_lane(queue))


def start_worker(env: dict[str, str], queues: tuple[str, ...], concurrency: int) -> Worker:
    """A real ``celery -A bench.bare_app worker`` process (the harnesses' :class:`Worker`)."""
    return Worker(env, queues=queues, concurrency=concurrency, app="bench.bare_app")


def _check_loopback(url: str) -> None:
    from urllib.parse import urlparse

    host = urlparse(url).hostname
    if host not in LOOPBACK:
        raise RuntimeError(f"the benchmark talks to loopback only, not {url}")


def stop_on_sigterm() -> None:
    """End this benchmark on SIGTERM as on Ctrl-C, through its ``finally`` blocks: the workers it
    starts run in sessions of their own (:class:`~aipool.harness.worker.Worker`), and outlived a
    benchmark that a supervisor, a CI timeout or ``kill`` stopped."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)


def _exit_on_sigterm(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def prepare(quick: bool) -> Pool:
    """Point the environment at db 14, the bench ledger and a fresh simulator; empty db 14."""
    import redis

    from aipool.ledger.testing import scratch_database
    from aipool.simulator import Simulator

    _check_loopback(BENCH_REDIS_URL)
    _check_loopback(BENCH_PG_SERVER.replace("postgresql+psycopg", "postgresql"))
    simulator = Simulator(admin_port=None).start()
    env = {
        "REDIS_URL": BENCH_REDIS_URL,
        "CELERY_BROKER_URL": BENCH_REDIS_URL,
        "CELERY_RESULT_BACKEND": BENCH_REDIS_URL,
        "DATABASE_URL": scratch_database(BENCH_DATABASE, server=BENCH_PG_SERVER),
        "GEMINI_API_KEY": "bench-gemini-key",
        "ANTHROPIC_API_KEY": "bench-anthropic-key",
        "NVIDIA_API_KEY": "nvapi-bench-key",
        # A dead provider fails fast; a hung one would only measure the timeout.
        **{f"AIPOOL_TIMEOUT_{p}": "5" for p in ("OLLAMA", "GEMINI", "CLAUDE", "NEMOTRON")},
        **{f"AIPOOL_{p}_{k}": v for p in ("GEMINI", "CLAUDE") for k, v in _ROOMY.items()},
    }
    for kind, name in _ENV_FOR.items():
        env[name] = simulator.base_urls[kind]
        _check_loopback(env[name])
    os.environ.update(env)
    # Leftovers of other runs (PROMETHEUS_MULTIPROC_DIR would start a metrics server per worker).
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    client = redis.Redis.from_url(BENCH_REDIS_URL)
    client.flushdb()
    from bench.bare_app import app

    return Pool(app=app, simulator=simulator, redis=client, quick=quick)
