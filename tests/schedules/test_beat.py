"""The beat schedule: every entry names a registered maintenance task on the maintenance queue."""

from __future__ import annotations

from celery import Celery
from celery.schedules import crontab

from schedules.beat import MAINTENANCE_QUEUE, beat_schedule, task_routes


def test_given_the_schedule_when_read_then_every_task_exists_and_goes_to_maintenance() -> None:
    # Given: an app that knows the shared tasks
    import tasks.maintenance  # noqa: F401  (registers the shared tasks)

    app = Celery("beat-test", set_as_current=False)
    app.finalize()
    # Then
    for name, entry in beat_schedule.items():
        assert entry["task"] in app.tasks, name
        assert entry["options"]["queue"] == MAINTENANCE_QUEUE
    # every scheduled task, and the breaker-alert task the workers send, goes to maintenance
    assert set(task_routes) >= {e["task"] for e in beat_schedule.values()}
    assert "aipool.breaker_transition" in task_routes
    assert {r["queue"] for r in task_routes.values()} == {MAINTENANCE_QUEUE}


def test_given_the_schedule_when_read_then_the_cadences_follow_the_design() -> None:
    assert beat_schedule["drain-ledger"]["schedule"] <= 10
    assert beat_schedule["rollup-ledger"]["schedule"] == crontab(minute="*/5")
    assert beat_schedule["budget-checks"]["schedule"] == crontab(minute="*/5")
    # one roll-up catches up every day that received rows: no closing runs at fixed hours
    assert not any("yesterday" in name or "month" in name for name in beat_schedule)
    assert beat_schedule["daily-budget-report"]["schedule"] == crontab(hour=9, minute=0)
    assert beat_schedule["sweep-abandoned-attempts"]["schedule"] == crontab(minute="*")


def test_given_beat_without_a_schedule_option_when_it_runs_then_its_file_is_under_var(
    tmp_path,
) -> None:  # type: ignore[no-untyped-def]
    import signal
    import subprocess
    import sys

    from tests.conftest import worker_env
    from tests.support.pool import ROOT
    from tests.support.services import RedisServer
    from tests.support.waiting import eventually

    # Given beat started as the README starts it, in a fresh directory with no var/
    server = RedisServer().start()
    env = worker_env(
        REDIS_URL=server.url,
        CELERY_BROKER_URL=server.url,
        CELERY_RESULT_BACKEND=server.url,
        PYTHONPATH=str(ROOT),
    )
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "workers.app", "beat"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        # When it has written its schedule
        eventually(lambda: list((tmp_path / "var").glob("celerybeat-schedule*")), 30, "schedule")
    finally:
        beat.send_signal(signal.SIGTERM)
        beat.communicate(timeout=15)
        server.stop()
    # Then the file is under var/ (git-ignored) and nothing landed beside it
    assert [p.name for p in tmp_path.iterdir()] == ["var"]
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "/var/" in ignored and "celerybeat-schedule*" in ignored
