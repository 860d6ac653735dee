"""The pool's Celery app plus bare tasks: the baselines ``bench/run`` measures the pool against.

``celery -A bench.bare_app worker`` serves exactly like ``workers.app`` (same settings: late acks,
task events, the edge consumer), plus three tasks that do what a hop of the pool does with none
of the pool's own work (no routing, breaker, quota, ledger or contract):

- ``bench.noop``: returns at once (the floor of one Celery round trip);
- ``bench.hop``: replaces itself onto each queue of ``queues`` in turn, the way ``ai.generate``
  moves from ``router`` to a provider's queue, and on a provider's queue calls that provider
  directly through its SDK (errors are ignored: a failed call moves on, as a failover does);
- ``bench.modules``: which provider SDKs the serving process has imported.
"""

from __future__ import annotations

import sys
from typing import Any

from celery import Task

from bench import sdk_calls
from bench.sdk_calls import SDK_MODULES
from workers.app import app

__all__ = ["app"]


@app.task(name="bench.noop")
def noop() -> dict[str, str]:
    """Nothing: a bare Celery round trip."""
    return {"status": "ok"}


@app.task(name="bench.hop", bind=True)
def hop(self: Task[Any, Any], queues: list[str] | None = None, call: bool = True) -> Any:
    """Call this queue's provider (when ``call``), then replace onto the next queue, if any."""
    here = (self.request.delivery_info or {}).get("routing_key", "")
    if call and here in SDK_MODULES:
        sdk_calls.call(here)
    if queues:
        following, rest = queues[0], queues[1:]
        return self.replace(
            self.signature(
                kwargs={"queues": rest, "call": call}, queue=following, routing_key=following
            )
        )
    return {"status": "ok", "provider": here}


@app.task(name="bench.modules")
def modules() -> dict[str, bool]:
    """Which provider SDKs this process has imported."""
    return {provider: module in sys.modules for provider, module in SDK_MODULES.items()}
