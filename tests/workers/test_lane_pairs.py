"""A worker serving one lane of a queue and not the other says so at start (issue #40: a pool
started with ``-Q router,ollama,nemotron,gemini,claude`` left every urgent request unanswered,
and nothing warned)."""

from __future__ import annotations

import pytest

from aipool.lanes import QUEUES
from tests.support.private_pool import private_pool
from tests.support.waiting import eventually
from workers.lane_pairs import SERVED, unserved_siblings, warning

ROUTINE_ONLY = ("router", "ollama", "nemotron", "gemini", "claude")


def test_each_routine_lane_without_its_urgent_lane_is_named() -> None:
    assert unserved_siblings(ROUTINE_ONLY, consumed=ROUTINE_ONLY) == [
        (lane, f"{lane}.urgent") for lane in sorted(ROUTINE_ONLY)
    ]


def test_a_lane_another_worker_serves_is_not_named() -> None:
    assert unserved_siblings(["ollama"], consumed=["ollama.urgent", "gemini"]) == []
    assert unserved_siblings(["ollama.urgent"], consumed=[]) == [("ollama.urgent", "ollama")]


def test_queues_that_are_no_lanes_are_not_named() -> None:
    assert unserved_siblings(["maintenance", "celery", "other"], consumed=[]) == []


def test_the_warning_names_the_lane_and_how_to_serve_every_lane() -> None:
    line = warning("gemini", "gemini.urgent")
    assert "no running worker consumes gemini.urgent" in line
    assert "urgent requests for gemini wait there" in line
    assert "`aipool worker`" in line and f"-Q {','.join(QUEUES)}" in line


@pytest.mark.integration
def test_a_worker_started_on_the_routine_lanes_only_warns_for_each_urgent_lane() -> None:
    # Given a worker started the way Celery's habits suggest, alone on its broker
    with private_pool(13, app="workers.app", queues=ROUTINE_ONLY, concurrency=1) as pool:
        log = pool.worker.log_path
        # When it is ready, then its log names each urgent lane nobody consumes
        for lane in ROUTINE_ONLY:
            line = f"this worker consumes {lane} but no running worker consumes {lane}.urgent"
            eventually(lambda line=line: line in log.read_text(errors="replace"), 30, line)


@pytest.mark.integration
def test_a_worker_on_every_lane_warns_of_none() -> None:
    with private_pool(13, app="workers.app", queues=QUEUES, concurrency=1) as pool:
        log = pool.worker.log_path
        # Once it has asked, it says every lane is served, and warns of none
        eventually(lambda: SERVED in log.read_text(errors="replace"), 30, "the lanes checked")
        assert "no running worker consumes" not in log.read_text(errors="replace")


@pytest.mark.integration
def test_a_pool_child_killed_after_the_check_is_replaced_by_one_that_serves(healthy) -> None:  # type: ignore[no-untyped-def]
    # Given a worker whose lanes check has run (in its parent process, before any child is
    # forked again)
    with private_pool(13, app="workers.app", queues=QUEUES, concurrency=1) as pool:
        log = pool.worker.log_path
        eventually(lambda: SERVED in log.read_text(errors="replace"), 30, "the lanes checked")
        # When its one pool child is SIGKILLed, and a request arrives
        pool.worker.kill_child()
        sent = pool.app.send_task(
            "ai.generate", kwargs={"request": {"prompt": "What is a pod?"}}, queue="router"
        )
        # Then the child that replaces it starts and answers (with the check borrowing a
        # connection from the app's pool, every child forked after it hung at start:
        # "Timed out waiting for UP message")
        assert sent.get(timeout=60)["status"] == "ok"
        assert "Timed out waiting for UP message" not in log.read_text(errors="replace")
