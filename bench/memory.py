"""Resident memory of a worker per queue, and which provider SDKs each one has imported."""

from __future__ import annotations

from bench.environment import Pool, lanes_of
from bench.figures import Figure, Report
from bench.latency import SIMPLE, TIMEOUT_S
from bench.load import CORRELATE

QUEUES = ("router", "ollama", "gemini", "claude", "nemotron", "maintenance")


#: A request whose route starts on each provider, to warm that provider's worker.
_WARM = {
    "ollama": SIMPLE,
    "gemini": {"prompt": CORRELATE},
    "claude": {"prompt": "What is a pod?", "priority": "critical"},
    "nemotron": {
        "prompt": "restart payment-api",
        "tools": [
            {
                "name": "k8s_restart",
                "description": "Restart a deployment",
                "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
            }
        ],
    },
}


def memory(pool: Pool, report: Report) -> None:
    """One worker (one pool process) per queue, each warmed by a request it serves."""
    pool.reset_guards("ollama", "gemini", "claude", "nemotron")
    from bench.environment import start_worker

    # Each worker serves its queue's two lanes (aipool.lanes): a critical request waits in
    # claude.urgent.
    workers = {queue: start_worker(pool.worker_env(), lanes_of(queue), 1) for queue in QUEUES}
    try:
        for worker in workers.values():
            worker.wait_ready(pool.app, timeout=60)
        for request in _WARM.values():
            pool.app.send_task("ai.generate", kwargs={"request": request}, queue="router").get(
                timeout=TIMEOUT_S
            )
        pool.app.send_task("bench.noop", queue="maintenance", routing_key="maintenance").get(
            timeout=TIMEOUT_S
        )
        strays: dict[str, list[str]] = {}
        for queue, worker in workers.items():
            loaded = pool.app.send_task("bench.modules", queue=queue, routing_key=queue).get(
                timeout=TIMEOUT_S
            )
            sdks = sorted(name for name, present in loaded.items() if present)
            others = [name for name in sdks if name != queue]
            if others:
                strays[queue] = others
            report.add(
                Figure(
                    "memory",
                    f"resident memory, {queue} worker (parent + 1 process)",
                    worker.rss_bytes() / 2**20,
                    "MiB",
                    details={"sdks_imported": sdks},
                )
            )
        report.add(
            Figure(
                "memory",
                "workers that import another provider's SDK",
                len(strays),
                "workers",
                "0 (each imports only its own)",
                not strays,
                details={"strays": strays},
            )
        )
    finally:
        for worker in workers.values():
            worker.stop()
