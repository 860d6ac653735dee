"""Who sends the pool's alerts: the pool itself, or Prometheus (``AIPOOL_ALERTS``).

Every alert has exactly one sender, so one condition never pages twice:

- ``pool`` (the default, for a pool without Alertmanager): beat's budget checks and the breaker
  listener send budget and breaker alerts through the pool's notifiers (Slack, webhook, e-mail).
  The Prometheus rules for those conditions stay silent.
- ``prometheus``: Prometheus evaluates them on the gauges the maintenance worker exports and
  Alertmanager pages; the pool sends only its daily report.

The maintenance worker reads the setting for both sides: it runs the pool's checks and exports
``aipool_alert_sender_info{sender=...}``, which the Prometheus rules for those alerts require.
Operational alerts (workers, queues, latency) are always Prometheus's.
"""

from __future__ import annotations

from collections.abc import Mapping

from aipool.settings import settings

ALERTS_ENV = "AIPOOL_ALERTS"
POOL = "pool"
PROMETHEUS = "prometheus"
SENDERS = (POOL, PROMETHEUS)


def alert_sender(env: Mapping[str, str] | None = None) -> str:
    """``"pool"`` or ``"prometheus"``, from ``AIPOOL_ALERTS`` (default ``pool``)."""
    if env is None:
        return settings().alerts.sender
    value = (env.get(ALERTS_ENV) or POOL).strip().lower()
    if value not in SENDERS:
        raise ValueError(f"{ALERTS_ENV} must be one of {', '.join(SENDERS)}, not {value!r}")
    return value


def pool_sends_alerts(env: Mapping[str, str] | None = None) -> bool:
    """Whether the pool's own notifiers send budget and breaker alerts."""
    return alert_sender(env) == POOL
