"""How long a producer on the pool's result backend waits for Redis to come back."""

from __future__ import annotations

from celery import Celery

from aipool.redis.results import outage_window_s


def _pool_conf(**changes: object) -> object:
    app = Celery("window", set_as_current=False)
    app.config_from_object("celeryconfig")
    app.conf.update(changes)
    return app.conf


def test_a_producer_waits_as_long_as_a_worker_may_still_be_storing_its_answer() -> None:
    # A worker's write is tried 41 times, each reconnecting for up to 5 s then pausing up to 1 s
    # (about 3.6 min against a closed port): its hard time limit (120 s) ends it first
    assert outage_window_s(_pool_conf()) == 120
    # With a longer limit, the tries themselves end first: 41 x (5 + 1) s
    assert outage_window_s(_pool_conf(task_time_limit=600)) == 246
    # Without one, so do they
    assert outage_window_s(_pool_conf(task_time_limit=None)) == 246
