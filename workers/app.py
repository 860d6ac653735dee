"""The Celery application of the pool: ``celery -A workers.app worker -Q ollama`` and friends."""

from __future__ import annotations

from urllib.parse import urlsplit

from celery import Celery

app = Celery("aipool")
app.config_from_object("celeryconfig")
app.conf.include = ["tasks.generate", "tasks.probe", "tasks.maintenance"]

# No message kills a worker: every task message is checked at the edge before Celery acts on it
# (workers/edge.py). The Redis channel also checks the envelope, which fails before any consumer
# code runs; AMQP has no such envelope. The embedded broker (redis+socket://) is named by its URL
# prefix, which kombu resolves itself, so it keeps kombu's own channel.
app.conf.worker_consumer = "workers.edge:EdgeConsumer"
if (
    urlsplit(str(app.conf.broker_url)).scheme in ("redis", "rediss")
    and not app.conf.broker_transport
):
    app.conf.broker_transport = "workers.edge:RedisTransport"

# Worker-process wiring (metrics server, prometheus multiprocess cleanup) lives with the signals.
from workers import signals  # noqa: E402,F401
