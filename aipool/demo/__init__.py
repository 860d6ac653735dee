"""``aipool demo``: the whole pool on one machine, against simulated providers, in about a minute.

Starts the loopback provider simulators, a real ``celery worker`` serving every queue, and sends
requests that show routing and each fallback path. It never talks to a real provider: every base
URL is forced to the simulators. Redis is an embedded server unless ``--redis-url`` is given, so a
demo never touches a production broker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table

TOOL = {
    "name": "restart_deployment",
    "description": "Restart a Kubernetes deployment",
    "parameters": {
        "type": "object",
        "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
        "required": ["namespace", "name"],
    },
}
CODE = "Please review this change:\n```python\ndef retry(n):\n    while n:\n        n -= 1\n```"
ALERTS = (
    "Three alerts fired at once: KubePodCrashLooping on payment-api, HighLatency on checkout, "
    "and PostgresReplicationLag on orders-db. First correlate them, then find the root cause, "
    "then propose a remediation plan for each service."
)


@dataclass(frozen=True)
class Scenario:
    title: str
    request: dict[str, Any]
    faults: dict[str, str] = field(default_factory=dict)


SCENARIOS = (
    Scenario("simple question → small local model", {"prompt": "What is a Kubernetes pod?"}),
    Scenario("code review → larger local model", {"prompt": CODE}),
    Scenario("complex alert triage → cloud", {"prompt": ALERTS}),
    Scenario("tool call → Nemotron", {"prompt": "Restart api in prod", "tools": [TOOL]}),
    Scenario("Ollama down → Gemini", {"prompt": "What is a pod?"}, {"ollama": "down"}),
    Scenario(
        "Ollama and Gemini failing → Claude",
        {"prompt": "What is a pod?"},
        {"ollama": "down", "gemini": "error_500"},
    ),
    Scenario(
        "everything down → static answer",
        {"prompt": "What is a pod?"},
        {"ollama": "down", "gemini": "down", "claude": "down"},
    ),
    Scenario(
        "tool providers down → refusal",
        {"prompt": "Restart api in prod", "tools": [TOOL]},
        {"nemotron": "down", "gemini": "down", "claude": "down"},
    ),
)


def _trail(answer: dict[str, Any]) -> str:
    return " → ".join(f"{a['provider']}:{a['outcome']}" for a in answer.get("attempts", []))


def _start_worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "workers.app",
            "worker",
            "-Q",
            "router,ollama,nemotron,gemini,claude,maintenance",
            "-c",
            "4",
            "-n",
            "demo@%h",
            "-l",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def run_demo(console: Console, per_scenario: int = 1, redis_url: str | None = None) -> int:
    """Run every scenario; return 0 when each ended as expected, 1 otherwise."""
    from aipool.simulator import Simulator

    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
        os.environ.setdefault("AIPOOL_DATA_DIR", "var/demo")
    with Simulator() as sim:
        for env_name, kind in (
            ("OLLAMA_BASE_URL", "ollama"),
            ("GEMINI_BASE_URL", "gemini"),
            ("ANTHROPIC_BASE_URL", "anthropic"),
            ("NVIDIA_BASE_URL", "openai"),
        ):
            os.environ[env_name] = sim.base_urls[kind]
        for key in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY"):
            os.environ[key] = "demo-key-for-the-simulator"
        for provider in ("OLLAMA", "GEMINI", "CLAUDE", "NEMOTRON"):
            os.environ.setdefault(f"AIPOOL_TIMEOUT_{provider}", "3")
        from aipool.redis_url import redis_url as shared_url

        console.print(f"[bold]aipool demo[/]  redis={shared_url()}  simulators={sim.admin_url}")
        from tasks.client import submit
        from workers.app import app
        from workers.runtime import shared_redis

        worker = _start_worker(dict(os.environ))
        try:
            deadline = time.monotonic() + 60
            while not app.control.ping(timeout=0.5):
                if worker.poll() is not None or time.monotonic() > deadline:
                    console.print("[red]the worker did not start[/]")
                    return 1
            table = Table(title="requests through the pool")
            for column in ("scenario", "status", "answered by", "attempts", "ms"):
                table.add_column(column)
            for scenario in SCENARIOS:
                sim.reset()
                for key in shared_redis().scan_iter("aipool:breaker:*"):
                    shared_redis().delete(key)
                for provider, fault in scenario.faults.items():
                    sim.set_fault(provider, fault)
                for _ in range(per_scenario):
                    answer = submit(dict(scenario.request, user_id="demo")).get(timeout=60)
                    table.add_row(
                        scenario.title,
                        answer["status"],
                        f"{answer['provider']} {answer['model']}",
                        _trail(answer),
                        f"{answer['latency_ms']:.0f}",
                    )
            sim.reset()
            console.print(table)
            from aipool.health import usage_report
            from aipool.status_view import render_status

            render_status(usage_report(shared_redis()), console)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    return 0
