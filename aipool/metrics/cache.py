"""Prometheus metrics of the response cache (:mod:`aipool.cache`).

``aipool_cache_lookups_total{result, service}`` counts each look-up of a cacheable request by what
it found: ``hit`` (answered from the cache), ``lead`` (nobody had the answer: this request asks a
provider) or ``wait`` (an identical request was fetching it). The hit ratio is
``hit / (hit + lead)`` (a follower's looks are ``wait`` until its last, a ``hit``). What hits
saved is ``aipool_cache_saved_usd_total{provider, service}`` (:func:`aipool.metrics.hops.observe_attempt`),
per day with ``increase(...[1d])``. Labels are bounded as every pool metric's are: the service is
a declared one or ``other``.
"""

from __future__ import annotations

from prometheus_client import Counter

from aipool.metrics.hops import service_label

LOOKUPS = Counter(
    "aipool_cache_lookups",
    "Response cache look-ups of cacheable requests, by what they found (hit, lead, wait) and "
    "service.",
    ["result", "service"],
)


def observe_lookup(found: str, service: str | None) -> None:
    """Count one look-up that found ``found`` (``hit``, ``lead`` or ``wait``)."""
    LOOKUPS.labels(found, service_label(service)).inc()
