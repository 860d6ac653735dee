"""Celery settings of the aipool worker pool, every one overridable from the environment.

Loaded by ``workers.app:app``. Defaults follow DESIGN.md: JSON only, late acks with redelivery of a
lost worker's message, prefetch 1 (so queue length is what KEDA scales on), events on for Flower
(``AIPOOL_TASK_EVENTS``), Asia/Taipei calendar.

The broker is Redis (``REDIS_URL``) unless ``CELERY_BROKER_URL`` names another, such as RabbitMQ
(``amqp://``). Results, breakers and quotas stay in Redis whatever the broker: a result backend is
never derived from an AMQP broker URL (Celery has no ``amqp`` result backend any more). A Redis
behind Sentinel (``sentinel://``, aipool/redis/sentinel.py) is kombu's Sentinel transport and
Celery's Sentinel result backend, told the master's name: both follow the master across a failover.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kombu.entity import Exchange, Queue

from aipool.lanes import QUEUES as LANE_QUEUES
from aipool.redis.sentinel import is_sentinel
from aipool.redis.url import celery_url, sentinel_transport_options
from aipool.settings import settings
from schedules.beat import beat_schedule as beat_schedule
from schedules.beat import task_routes as _maintenance_routes
from schedules.store import DEFAULT_SCHEDULE_FILE

_settings = settings()

broker_url = _settings.celery_broker_url or celery_url()
result_backend = _settings.celery_result_backend or celery_url()


def is_amqp(url: str) -> bool:
    """Whether ``url`` names an AMQP broker (RabbitMQ) rather than Redis."""
    return urlsplit(url).scheme in ("amqp", "amqps", "pyamqp")


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

# The longest hop: nemotron's 60 s timeout plus margin; the soft limit lets a hop answer or move on
# before the hard limit kills its process.
task_soft_time_limit = _settings.task_soft_time_limit_s  # None: no soft limit
task_time_limit = _settings.task_time_limit_s
# On the Redis broker a message taken by a worker that dies whole (SIGKILL, OOM, node lost) comes
# back only after the visibility timeout. It must exceed the longest a live worker holds a message
# (the hard limit: prefetch 1, no ETA tasks) or a slow hop would run twice; anything above that is
# time a crashed worker's requests wait. Hard limit + 60 s.
visibility_timeout = _settings.effective_visibility_timeout_s


def transport_options(url: str) -> dict[str, Any]:
    """Broker transport options for ``url``: each broker's own, none of the other's."""
    if is_amqp(url):
        # RabbitMQ gives a dead consumer's unacked messages back as soon as its connection drops:
        # no visibility timeout. Publishes are confirmed, so a hop is acked only once the broker
        # holds its next message.
        return {"confirm_publish": True}
    return {
        **(sentinel_transport_options() if is_sentinel(url) else {}),
        "visibility_timeout": visibility_timeout,
        # kombu looks for such messages only every interval × throttle seconds (10 × 10 by
        # default), which would add up to 100 s to the visibility timeout: every tenth of it.
        "unacked_restore_interval": max(1, visibility_timeout // 10),
        "unacked_restore_throttle": 1,
        # Priorities off: kombu would keep each priority in a list of its own (``claude\x06\x163``)
        # that KEDA's list scaler never counts, and serves 0 first (the reverse of AMQP). One list
        # per queue is the backlog the autoscaler sees. A producer's priority is still carried.
        "priority_steps": [0],
        "socket_timeout": _settings.redis_socket_timeout_s,
        "socket_connect_timeout": _settings.redis_connect_timeout_s,
    }


broker_transport_options = transport_options(broker_url)
result_backend_transport_options = {
    # Each result write's own reconnection, a deadline (kombu's retry_over_time reads ``timeout``
    # as one): 5 s, tried again by the retries below. A producer waiting for a result does not
    # use it: the pool's backend (workers/result_backend.py, aipool/redis/results.py) waits out an
    # outage as long as those retries take, without holding ``get`` past its own timeout.
    "retry_policy": {"timeout": _settings.redis_socket_timeout_s},
    **(sentinel_transport_options() if is_sentinel(result_backend) else {}),
}
# A hop that answered while Redis was restarting keeps trying to store its answer rather than
# failing the producer with a ConnectionError after the provider was paid: 41 tries, each
# reconnecting for up to 5 s (above) and pausing up to 1 s, longer than the hard time limit (120 s)
# that ends them first (aipool.redis.results.outage_window_s, where producers wait as long).
result_backend_always_retry = True
result_backend_max_retries = 40
result_backend_base_sleep_between_retries_ms = 100
result_backend_max_sleep_between_retries_ms = 1000
redis_socket_timeout = _settings.redis_socket_timeout_s
redis_socket_connect_timeout = _settings.redis_connect_timeout_s
# A result is kept for its producer to read, an hour by default; nothing of the request is kept
# with it (no args or kwargs in the result meta: they hold the prompt).
result_expires = _settings.result_expires_s
result_extended = False
broker_connection_retry_on_startup = True
# A worker that lost its broker tries it again every second (workers/edge/consumer.py) for as long
# as it takes: it can do nothing else, and restarting it reaches the same URL. Its probes say
# whether it lives (k8s/), and `aipool worker` relays the outage once.
broker_connection_max_retries = None
# A Redis that fails over (Sentinel) or restarts is away for seconds. A hop forwarding a request,
# and a producer sending one, keep trying for about 40 s (41 tries at most a second apart) instead
# of Celery's 0.6 s, after which the request would end in dispatch_failed.
task_publish_retry_policy = {
    "max_retries": 40,
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 1,
}

# Only Flower reads task events (the metrics are written by the hops themselves). They cost every
# hop two or three publishes (docs/benchmarks.md); AIPOOL_TASK_EVENTS=0 leaves them off until a
# Flower turns a worker's on (it broadcasts enable_events every few seconds), and keeps them off
# in producers. STARTED states are not stored: no producer reads them, and each costs a
# result-backend write per hop.
worker_send_task_events = _settings.task_events
task_send_sent_event = _settings.task_events
task_track_started = False

timezone = _settings.timezone
enable_utc = True

# Beat's schedule file: under var/ (git-ignored, beside the SQLite ledger) unless --schedule says
# where, never celerybeat-schedule.* in the directory beat was started from (schedules/store.py).
beat_scheduler = "schedules.store:PoolScheduler"
beat_schedule_filename = DEFAULT_SCHEDULE_FILE

_direct = Exchange("aipool", type="direct")
# Every queue, each lane its own (aipool.lanes: routine and urgent work never share a line).
QUEUES = LANE_QUEUES
# On RabbitMQ every queue of the pool is a quorum queue: replicated, durable, and a consumer's
# unacked messages return to the queue the moment its connection is gone. Redis ignores queue
# arguments. Quorum queues take no priorities (RabbitMQ 3.x), which agrees with priorities off on
# Redis. The virtual host must have quorum as its default queue type (docs/operations.md): a
# producer with Celery's defaults declares ``router`` with no type, which RabbitMQ refuses against
# a quorum queue anywhere else.
QUORUM = {"x-queue-type": "quorum"}
task_queues = tuple(
    Queue(name, _direct, routing_key=name, queue_arguments=QUORUM) for name in QUEUES
)
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
