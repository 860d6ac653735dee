"""The Celery application of the pool: ``celery -A workers.app worker -Q ollama`` and friends."""

from __future__ import annotations

from celery import Celery

app = Celery("aipool")
app.config_from_object("celeryconfig")
app.conf.include = ["tasks.generate", "tasks.probe", "tasks.maintenance"]

# Worker-process wiring (metrics server, prometheus multiprocess cleanup) lives with the signals.
from workers import signals  # noqa: E402,F401
