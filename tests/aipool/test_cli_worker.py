"""``aipool worker``'s command line for one worker (``worker_argv``), the one every pool worker is
started with: this command's classes, the demo's worker and the harnesses'."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from celery import Celery
from celery.bin.worker import worker as celery_worker

from aipool.cli.worker import worker_argv


def _as_celery_reads_it(argv: list[str]) -> dict[str, Any]:
    """The options ``celery worker`` parses from ``argv`` (its own click command, not run)."""
    app = Celery("parse-only", set_as_current=False)
    options = argv[argv.index("worker") + 1 :]
    return dict(celery_worker.make_context("worker", options, obj=SimpleNamespace(app=app)).params)


def test_a_class_of_workers_is_named_after_its_class_on_this_host() -> None:
    # Given the routing class's queues and processes
    # When its command is built
    argv = worker_argv("routing", ("router", "maintenance"), 2, "INFO")
    # Then it runs the pool's app, fair, named routing@<host>, and Celery accepts every option
    assert argv[argv.index("-A") + 1] == "workers.app"
    parsed = _as_celery_reads_it(argv)
    assert parsed["queues"] == ["router", "maintenance"]
    assert parsed["concurrency"] == 2
    assert parsed["hostname"].startswith("routing@")
    assert parsed["optimization"] == "fair"
    assert not parsed["without_mingle"]


def test_a_lone_worker_skips_the_cluster_chatter_it_names() -> None:
    # Given the demo's lone worker, which has no sibling and no monitor
    # When its command is built without gossip, mingle and heartbeat
    argv = worker_argv("demo-1", ("router",), 2, "INFO", without=("gossip", "mingle", "heartbeat"))
    # Then Celery reads all three as switched off
    parsed = _as_celery_reads_it(argv)
    assert parsed["without_gossip"]
    assert parsed["without_mingle"]
    assert parsed["without_heartbeat"]


def test_a_harness_worker_runs_its_own_app_under_an_exact_node_name() -> None:
    # Given a harness that pings its worker by name and runs the bench's plain app
    # When the command is built for host localhost
    argv = worker_argv("test-1", ("first",), 1, "DEBUG", app="bench.plain_app", host="localhost")
    # Then the app and the node name are exactly those
    assert argv[argv.index("-A") + 1] == "bench.plain_app"
    assert _as_celery_reads_it(argv)["hostname"] == "test-1@localhost"
