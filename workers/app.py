"""The Celery application of the pool: ``celery -A workers.app worker -Q ollama`` and friends.

A worker or beat says in its first log line which Redis it serves, and says so loudly when that is
an embedded one (only processes on this machine can reach it). Started without any Redis it stops
at once with one line saying how to give it one. The router worker also consumes Celery's default
queue (``celery``), so a producer that forgot ``queue="router"`` is still answered, with a warning.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

from celery import Celery

from aipool import log_guard
from aipool.errors import NoLogin, NoRedis, PoolUnavailable, SettingsError
from workers import (
    announce,
    backlog,
    default_queue,
    flower,
    lane_pairs,
    memory,
    runtime,
    signals,
    tracing,
)
from workers.result_backend import install as install_result_backend

# Messages of ai.generate never carry the prompt in what Flower shows (workers/messages.py); a
# worker answers a control command once, never holding its event loop on a lost Redis
# (workers/control.py).
app = Celery("aipool", amqp="workers.messages:AMQP", control="workers.control:Control")
app.config_from_object("celeryconfig")
runtime.send_alerts_through(app)
# Results in Redis carry the hop's usage records in the same write (workers/result_backend.py).
install_result_backend(app)
# A re-dispatched hop (Task.replace raises Ignore) costs no traceback (workers/tracing.py).
tracing.install()


app.conf.include = ["tasks.generate", "tasks.probe", "tasks.maintenance"]


def _celery_command() -> bool:
    # Only the `celery` program turns a missing Redis into a one-line exit; a producer importing
    # this module gets NoRedis raised, to handle as it likes.
    program = Path(sys.argv[0])
    return program.name == "celery" or program.parts[-2:] == ("celery", "__main__.py")


try:
    # Reading the broker loads celeryconfig, which asks aipool.redis.url for the Redis.
    _broker_url = str(app.conf.broker_url)
except (NoRedis, SettingsError) as exc:
    if _celery_command():
        raise SystemExit(f"aipool: {exc}") from None
    raise

# Flower with a login, on loopback unless told otherwise (workers/flower.py).
if flower.running_flower():
    # Flower sends no worker signals: its records are scrubbed from here on (aipool/log_guard.py).
    log_guard.install()
    flower.withhold_answers(app)
    flower.exit_promptly()
    try:
        flower.guard_metrics()
        flower.secure_defaults(sys.argv, os.environ)
    except (NoLogin, PoolUnavailable) as exc:
        raise SystemExit(f"aipool: {exc}") from None

# No message kills a worker: every task message is checked at the edge before Celery acts on it
# (workers/edge/). The Redis channel also checks the envelope, which fails before any consumer
# code runs; AMQP has no such envelope. The embedded broker (redis+socket://) is named by its URL
# prefix, which kombu resolves itself, so it keeps kombu's own channel. So does Flower, which
# consumes no task: its broker view recognises a broker only by kombu's scheme (redis://,
# sentinel://), never by the pool's transport class.
app.conf.worker_consumer = "workers.edge.consumer:EdgeConsumer"
_TRANSPORTS = {
    "redis": "workers.edge.transport:RedisTransport",
    "rediss": "workers.edge.transport:RedisTransport",
    "sentinel": "workers.edge.transport:SentinelTransport",
}
_scheme = urlsplit(_broker_url).scheme
if _scheme in _TRANSPORTS and not app.conf.broker_transport and not flower.running_flower():
    app.conf.broker_transport = _TRANSPORTS[_scheme]

# The worker's and beat's life-cycle hooks, registered here and nowhere else: settings checked and
# logs scrubbed before anything starts, the metrics server, the ledger schema (workers/signals.py);
# the first log line (announce), Celery's default queue beside router (default_queue), the pool
# processes' garbage (memory), the lanes' waiting times (backlog) and their consumers (lane_pairs).
signals.connect()
announce.connect(app)
default_queue.connect()
memory.connect()
backlog.connect()
lane_pairs.connect()
