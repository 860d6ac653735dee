"""Gauges of beat's routines and of the calls they must sweep, read from Redis at scrape time.

- ``aipool_attempt_lease_overdue_seconds``: how long the oldest call past its lease has waited
  for the sweep (0 when none has). The sweep (beat, every minute) books such a call at its
  estimate; a figure that grows means no sweep runs (no beat, no maintenance worker, or its runs
  discarded, as clock skew once made them: issue #42). Alert: ``AipoolAttemptsUnswept``.
- ``aipool_routine_last_run_age_seconds{routine}``: seconds since each routine last began
  (:mod:`aipool.routines`), on Redis's clock like the figure above, so no host's clock enters.

Read by the maintenance worker only (:func:`aipool.metrics.pool_state.collectors_for`); a Redis that
cannot be read leaves them out of the scrape (``aipool_state_up{source="redis"}`` says so).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from aipool.attempt.layout import LEASES_KEY
from aipool.redis.lua import text
from aipool.routines import ROUTINES_KEY, redis_now, routine_key

log = logging.getLogger(__name__)


class RoutineState(Collector):
    """The two gauges above, from the Redis ``redis()`` returns."""

    def __init__(self, redis: Callable[[], Any]) -> None:
        self.redis = redis

    def collect(self) -> Iterator[Metric]:
        try:
            families = self._read()
        except Exception as exc:  # a scrape reports an outage, it never fails on one
            log.warning("routines: redis unreadable: %s", type(exc).__name__)
            return
        yield from families

    def _read(self) -> list[Metric]:
        client = self.redis()
        now = redis_now(client)
        oldest = client.zrange(LEASES_KEY, 0, 0, withscores=True)
        overdue = GaugeMetricFamily(
            "aipool_attempt_lease_overdue_seconds",
            "Seconds the oldest call past its lease has waited for the sweep (0 when none has).",
            value=max(0.0, now - float(oldest[0][1])) if oldest else 0.0,
        )
        age = GaugeMetricFamily(
            "aipool_routine_last_run_age_seconds",
            "Seconds since each of beat's routines last began, on Redis's clock.",
            labels=["routine"],
        )
        for name in sorted(text(n) for n in client.smembers(ROUTINES_KEY)):
            ran = client.hget(routine_key(name), "ran")
            if ran is not None:
                age.add_metric([name], max(0.0, now - float(text(ran))))
        return [overdue, age]
