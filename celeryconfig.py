"""Celery settings of the aipool worker pool, every one overridable from the environment.

Loaded by ``workers.app:app``. Defaults follow DESIGN.md: JSON only, late acks with redelivery of a
lost worker's message, prefetch 1 (so queue length is what KEDA scales on), events on for Flower,
Asia/Taipei calendar.
"""

from __future__ import annotations

import os

from kombu import Exchange, Queue

from aipool.chains import PROVIDERS
from aipool.redis_url import celery_url
from schedules.beat import beat_schedule as beat_schedule
from schedules.beat import task_routes as _maintenance_routes

_env = os.environ.get

broker_url = _env("CELERY_BROKER_URL") or celery_url()
result_backend = _env("CELERY_RESULT_BACKEND") or broker_url

# JSON only: a pickle payload from the broker would be remote code execution.
task_serializer = "json"
result_serializer = "json"
accept_content = ["json"]
result_accept_content = ["json"]
event_serializer = "json"

# At-least-once: a message is acked after its hop finished (or was re-dispatched), and a worker that
# dies mid-call gives it back. Quota and ledger writes are idempotent on (request id, attempt).
task_acks_late = True
task_reject_on_worker_lost = True
worker_prefetch_multiplier = 1

# The longest hop: nemotron's 60 s timeout plus margin. The broker must not redeliver a message
# that is still being worked on, so its visibility timeout is well above the hard limit.
task_soft_time_limit = int(_env("AIPOOL_TASK_SOFT_TIME_LIMIT", "90"))
task_time_limit = int(_env("AIPOOL_TASK_TIME_LIMIT", "120"))
broker_transport_options = {
    "visibility_timeout": int(_env("AIPOOL_VISIBILITY_TIMEOUT", "3600")),
}
result_backend_transport_options = {"retry_policy": {"timeout": 5.0}}
result_expires = int(_env("AIPOOL_RESULT_EXPIRES", str(24 * 3600)))
result_extended = True
broker_connection_retry_on_startup = True

# Flower and the metrics exporter read task events.
worker_send_task_events = True
task_send_sent_event = True
task_track_started = True

timezone = _env("AIPOOL_TIMEZONE", "Asia/Taipei")
enable_utc = True

_direct = Exchange("aipool", type="direct")
QUEUES = ("router", *PROVIDERS, "maintenance")
task_queues = tuple(Queue(name, _direct, routing_key=name) for name in QUEUES)
task_default_queue = "router"
task_default_exchange = "aipool"
task_default_routing_key = "router"
# A producer that knows only the task name lands on the router; later hops set their queue
# explicitly (task_routes would send a replaced task back to the same queue).
task_routes = {
    "ai.generate": {"queue": "router", "routing_key": "router"},
    **_maintenance_routes,
}

worker_hijack_root_logger = False
worker_redirect_stdouts = False
