"""Prometheus metrics of every hop, named as the alert rules and dashboard in ``k8s/monitoring``
expect.

Two carry ADR-006 §3's names, so queries written against the ADR work unchanged:
``ai_tokens_total{provider}`` (tokens providers reported; also by ``model`` and ``direction``, which
``sum by (provider)`` folds) and ``ai_requests_failed_total{provider}`` (calls that failed in a way
that counts against the provider; also by ``code``). They are the only series of their kind, not
copies of ``aipool_*`` ones, so the ADR's names cost no extra series.

Labels are bounded (provider, model, outcome, direction, code, service): never a user id or a
request id, so the series count stays fixed however many users the pool serves. ``service`` is
one of the services the route table declares, or ``other``: a name a request makes up never
becomes a label (:func:`service_label`). Requests, tokens and cost carry it (spend per service);
latency and failures, which say how a provider is doing, do not. Under Celery's prefork pool the
values are aggregated across processes through ``PROMETHEUS_MULTIPROC_DIR`` (see
``workers.signals``). Gauges of the pool's shared state (breakers, quotas, queues, budgets) are
read at scrape time instead, by the maintenance worker (:mod:`aipool.metrics.pool_state`).
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import Counter, Histogram

from aipool.attempt.event import AttemptEvent
from aipool.breaker.state import BreakerTransition
from aipool.contract.journey import Attempt
from aipool.contract.route import OTHER_SERVICE
from aipool.errors import ProviderFailure
from aipool.routing.table import RouteTableError, load_table


def _failure_codes() -> frozenset[str]:
    codes: set[str] = set()
    classes: list[type[ProviderFailure]] = [ProviderFailure]
    while classes:
        cls = classes.pop()
        codes.add(cls.code)
        classes.extend(cls.__subclasses__())
    return frozenset(codes)


#: Error codes of failures that count against a provider (its breaker counts them too); a 400-class
#: rejection, a skipped hop or a passed deadline says nothing about the provider's health.
FAILURE_CODES = _failure_codes()

REQUESTS = Counter(
    "aipool_requests",
    "Hops handled, by provider, outcome (ok, error, circuit_open, quota_exceeded, ...) and the "
    "service the request came from (declared in the route table, else other).",
    ["provider", "outcome", "service"],
)
#: ADR-006's ``ai_tokens_total``.
TOKENS = Counter(
    "ai_tokens",
    "Tokens reported by providers, by the service the request came from too.",
    ["provider", "model", "direction", "service"],
)
COST = Counter(
    "aipool_cost_usd",
    "Cost of answered calls in USD, by provider and service.",
    ["provider", "service"],
)
#: What answers from the response cache saved: each hit's answer's cost when a provider gave it.
SAVED = Counter(
    "aipool_cache_saved_usd",
    "What answers from the response cache saved, in USD, by the provider whose answer was kept "
    "and the service.",
    ["provider", "service"],
)
LATENCY = Histogram(
    "aipool_call_latency_seconds",
    "Latency of model calls that reached the provider.",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 45, 90),
)
#: ADR-006's ``ai_requests_failed_total``.
FAILURES = Counter(
    "ai_requests_failed",
    "Calls that failed in a way that counts against the provider (timeouts, 5xx, 429, ...), by code.",
    ["provider", "code"],
)
BREAKER_TRANSITIONS = Counter(
    "aipool_breaker_transitions",
    "Breaker state changes, by the state entered.",
    ["provider", "state"],
)


def observe_attempt(event: AttemptEvent) -> None:
    """Count one hop (an :data:`~aipool.attempt.event.Observer`); a hop an earlier delivery
    already reported is not counted again."""
    if event.replayed:
        return
    provider = event.hop.provider
    service = service_label(event.route.service)
    _series(REQUESTS, provider, event.attempt.outcome, service).inc()
    code = failure_code(event.attempt)
    if code is not None:
        _series(FAILURES, provider, code).inc()
    if event.saved_usd:
        _series(SAVED, provider, service).inc(float(event.saved_usd))
    if event.attempt.outcome in ("ok", "error") and event.attempt.latency_ms:
        _series(LATENCY, provider).observe(event.attempt.latency_ms / 1000)
    completion = event.completion
    if event.input_tokens or event.output_tokens:
        model = completion.model if completion is not None else event.hop.model
        _series(TOKENS, provider, model, "input", service).inc(event.input_tokens)
        _series(TOKENS, provider, model, "output", service).inc(event.output_tokens)
        _series(COST, provider, service).inc(float(event.cost_usd))


#: The series a hop counts in, by metric and label values: the objects ``labels()`` returns for
#: them (it checks the values and takes the metric's lock on every call, four to six a hop).
#: Bounded as the labels are.
_labelled: dict[tuple[Any, tuple[str, ...]], Any] = {}


def _series(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, looked up once per process."""
    key = (metric, values)
    series = _labelled.get(key)
    if series is None:
        series = _labelled[key] = metric.labels(*values)
    return series


def service_label(service: str | None) -> str:
    """The ``service`` label of a request counted as ``service``: a service the route table in
    force declares, else ``other``. A worker's route already counts undeclared names as
    ``other``; this holds the label set to the table whatever a message carried."""
    return service if service is not None and service in _declared() else OTHER_SERVICE


#: The declared services and when they were read (monotonic): a hop must not pay for reading
#: the route table again (about 20 us); an edited table reaches the labels within this many s.
_DECLARED_FOR_S = 5.0
_declared_cache: tuple[float, frozenset[str]] = (float("-inf"), frozenset())


def _declared() -> frozenset[str]:
    global _declared_cache
    read_at, names = _declared_cache
    now = time.monotonic()
    if now - read_at >= _DECLARED_FOR_S:
        try:
            names = frozenset(load_table().services)
        except RouteTableError:  # unreadable now: the worker says so at routing
            names = frozenset()
        _declared_cache = (now, names)
    return names


def failure_code(attempt: Attempt) -> str | None:
    """The code of a failure that counts against the provider, else ``None``.

    A redelivered attempt whose call already ended carries no code and was counted when it ended.
    """
    if attempt.outcome != "error" or attempt.code not in FAILURE_CODES:
        return None
    return attempt.code


def observe_transition(event: BreakerTransition) -> None:
    """Count one breaker transition (a breaker listener)."""
    BREAKER_TRANSITIONS.labels(event.provider, str(event.new)).inc()
