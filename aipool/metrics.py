"""Prometheus metrics of the pool, named as the alert rules in ``k8s/monitoring`` expect.

Labels are bounded (provider, model, outcome, direction): never a user id or a request id, so the
series count stays fixed however many users the pool serves. Under Celery's prefork pool the
values are aggregated across processes through ``PROMETHEUS_MULTIPROC_DIR`` (see
``workers.signals``).
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from aipool.breaker.state import BreakerTransition
from aipool.hop import AttemptEvent

REQUESTS = Counter(
    "aipool_requests",
    "Hops handled, by provider and outcome (ok, error, circuit_open, quota_exceeded, ...).",
    ["provider", "outcome"],
)
TOKENS = Counter(
    "aipool_tokens", "Tokens reported by providers.", ["provider", "model", "direction"]
)
COST = Counter("aipool_cost_usd", "Cost of answered calls in USD.", ["provider"])
LATENCY = Histogram(
    "aipool_call_latency_seconds",
    "Latency of model calls that reached the provider.",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 45, 90),
)
BREAKER_TRANSITIONS = Counter(
    "aipool_breaker_transitions",
    "Breaker state changes, by the state entered.",
    ["provider", "state"],
)


def observe_attempt(event: AttemptEvent) -> None:
    """Count one hop (an :data:`~aipool.hop.Observer`)."""
    provider = event.hop.provider
    REQUESTS.labels(provider, event.attempt.outcome).inc()
    if event.attempt.outcome in ("ok", "error") and event.attempt.latency_ms:
        LATENCY.labels(provider).observe(event.attempt.latency_ms / 1000)
    completion = event.completion
    if completion is not None:
        TOKENS.labels(provider, completion.model, "input").inc(completion.input_tokens)
        TOKENS.labels(provider, completion.model, "output").inc(completion.output_tokens)
        COST.labels(provider).inc(float(event.cost_usd))


def observe_transition(event: BreakerTransition) -> None:
    """Count one breaker transition (a breaker listener)."""
    BREAKER_TRANSITIONS.labels(event.provider, str(event.new)).inc()
