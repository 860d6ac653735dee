"""A soak: steady traffic while providers fail and recover at random.

Runs ``AIPOOL_SOAK_SECONDS`` (10 s in make test, 240 s under make soak; ``AIPOOL_SOAK_SEED`` replays a
run). Every request gets a contract result, nothing is left in a queue or unacknowledged, every
attempt is one ledger row and the quota counters equal the ledger, and the worker's memory levels
off: its peak in the second half of the soak is within bounds of its peak in the first half.
(Pool children grow for the first few thousand requests -- SDKs, connection pools, caches -- and
then hold steady; a leak keeps growing.)
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from celery.result import AsyncResult
from sqlalchemy import Engine

from aipool.simulator import Simulator
from tests.support.accounting import (
    dead_letters,
    drain_everything,
    ledger_charges,
    ledger_rows,
    open_leases,
    quota_charges,
    rows_trail,
    trail,
)
from tests.support.broker import leftover_messages
from tests.support.figures import record_figure
from tests.support.pool import Worker
from tests.support.producer import Outcome, Producer
from tests.support.requests import CRITICAL, QUESTION, TOOL_QUESTION
from tests.support.services import RedisServer
from tests.support.sizes import sized_s
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

#: How long the faults are switched (``AIPOOL_SOAK_SECONDS``; 240 s under make soak).
SOAK_S = sized_s(10, 240, "AIPOOL_SOAK_SECONDS")
SEED = int(os.environ.get("AIPOOL_SOAK_SEED", str(int(time.time()))))
MAX_IN_FLIGHT = 6
CHAOS_EVERY_S = 1.5
#: The worker's peak memory in the second half of the soak over its peak in the first half.
RSS_GROWTH_BOUND = 1.3
RSS_SAMPLE_EVERY_S = 1.0


REQUESTS = (QUESTION, CRITICAL, TOOL_QUESTION)
PROVIDERS = ("ollama", "gemini", "claude", "nemotron")
#: Faults drawn at random (healthy twice as often as any one fault).
FAULTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("healthy", {}),
    ("healthy", {}),
    ("error_500", {}),
    ("rate_limit", {"retry_after": 1}),
    ("overloaded", {}),
    ("slow", {"ms": 300}),
    ("hang", {"seconds": 30}),
    ("malformed", {"body": "json"}),
    ("down", {}),
    ("bad_usage", {"output_tokens": -1}),
    ("no_usage", {}),
)
#: Breakers recover in seconds, so they open and close many times during the soak.
WORKER_ENV = {f"AIPOOL_{p.upper()}_RECOVERY_TIMEOUT": "3" for p in PROVIDERS}


@pytest.mark.timeout(SOAK_S + 240)
def test_a_soak_with_random_faults_answers_everything_and_leaves_nothing_behind(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    producer: Callable[[str], Producer],
    ledger: Engine,
) -> None:
    rng = random.Random(SEED)
    print(f"soak seed {SEED}, {SOAK_S:g} s")
    # Given a worker whose pool children have called every provider (Ollama down sends the
    # simple questions to Gemini): a child imports a provider's SDK on its first call to it, and
    # memory grows then whatever the pool does
    server = redis_server()
    client = server.client()
    worker = spawn_worker(server.url, concurrency=2, **WORKER_ENV)
    send = producer(server.url)
    outcomes: list[Outcome] = []
    providers.set_fault("ollama", "down")
    outcomes += send.collect([send.send(r) for r in REQUESTS for _ in range(4)], timeout=60)
    providers.heal("ollama")
    outcomes += send.collect([send.send(QUESTION) for _ in range(4)], timeout=60)
    rss_start = worker.rss_bytes()
    # When requests keep arriving while providers fail and recover at random
    pending: list[AsyncResult] = []
    switched: Counter[str] = Counter()
    start = time.monotonic()
    end = start + SOAK_S
    next_chaos = next_sample = start
    samples: list[tuple[float, int]] = []
    while time.monotonic() < end:
        if time.monotonic() >= next_sample:
            samples.append((time.monotonic() - start, worker.rss_bytes()))
            next_sample += RSS_SAMPLE_EVERY_S
        if time.monotonic() >= next_chaos:
            provider = rng.choice(PROVIDERS)
            kind, options = rng.choice(FAULTS)
            providers.set_fault(provider, kind, **options)
            switched[kind] += 1
            next_chaos += CHAOS_EVERY_S
        done = [r for r in pending if r.ready()]
        outcomes += send.collect(done, timeout=10)
        pending = [r for r in pending if r not in done]
        while len(pending) < MAX_IN_FLIGHT:
            pending.append(send.send(rng.choice(REQUESTS)))
        time.sleep(0.05)
    for provider in PROVIDERS:
        providers.heal(provider)
    outcomes += send.collect(pending, timeout=60)
    rss_end = worker.rss_bytes()
    first_half = max(rss for at, rss in samples if at < SOAK_S / 2)
    second_half = max([rss for at, rss in samples if at >= SOAK_S / 2] + [rss_end])
    # Then every request got a contract result
    unanswered = [o for o in outcomes if not o.answered]
    statuses = Counter(str(o.answer["status"]) for o in outcomes if o.answer)
    scenario = f"soak {SOAK_S:g} s, random faults"
    record_figure(
        scenario, "requests answered", f"{len(outcomes) - len(unanswered)}/{len(outcomes)}"
    )
    record_figure(scenario, "answers by status", dict(statuses))
    record_figure(scenario, "fault switches", sum(switched.values()))
    record_figure(scenario, "worker RSS after warm-up", round(rss_start / 2**20), "MiB")
    record_figure(scenario, "worker RSS peak, first half", round(first_half / 2**20), "MiB")
    record_figure(scenario, "worker RSS peak, second half", round(second_half / 2**20), "MiB")
    record_figure(scenario, "worker RSS at the end", round(rss_end / 2**20), "MiB")
    assert not unanswered, [o.error for o in unanswered][:5]
    assert set(statuses) <= {"ok", "fallback", "refused"}, statuses
    # And nothing is left in a queue or unacknowledged
    eventually(lambda: not leftover_messages(client), 10, "no message left on the broker")
    # And every attempt is one ledger row, none dead-lettered; the quota equals the ledger
    drained = drain_everything(client, ledger)
    assert (drained.duplicates, drained.dead, dead_letters(client)) == (0, 0, 0)
    rows = ledger_rows(ledger, [o.task_id for o in outcomes])
    assert all(rows_trail(rows, o.task_id) == trail(o.answer or {}) for o in outcomes)
    assert quota_charges(client) == ledger_charges(rows)
    assert open_leases(client) == 0
    # And the worker lives on, its memory levelling off
    assert worker.alive()
    assert second_half <= first_half * RSS_GROWTH_BOUND
