"""A worker app whose pool process times each stage of every task it runs (``bench.stages``).

``celery -A bench.stage_app worker`` serves the pool's app (``bench.bare_app``) or, with
``AIPOOL_BENCH_STAGES_APP=plain``, the plain Celery baseline (``bench.plain_app``: then nothing of
the pool is imported here either), with the stage meters of :mod:`bench.stage_meter`.
"""

from __future__ import annotations

import os

import redis

from bench.stage_meter import APP_ENV, PLAIN_STAGES, POOL_STAGES, connect

stages: tuple[tuple[str, str], ...]
if os.environ.get(APP_ENV) == "plain":
    from bench.plain_app import app

    stages = PLAIN_STAGES
else:
    from bench.bare_app import app

    stages = POOL_STAGES
connect(redis.Redis.from_url(app.conf.broker_url), stages)

__all__ = ["app"]
