"""Flower as the pool runs it (``celery -A workers.app flower``, the README's, compose's and
Kubernetes' command), started for real: no login refused unless anonymity is asked for, loopback
unless an address is given, and the address it serves said at start."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import TEST_DATABASE_URL, worker_env
from tests.support.flower import flower_process, serving
from tests.support.listening import listening_addresses
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.services import SentinelSet, free_port
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


@contextmanager
def _flower(
    tmp_path: Path, *args: str, **env: str
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    log = tmp_path / "flower.log"
    with flower_process(log, *args, **env) as process:
        yield process, log


def _serving(process: subprocess.Popen[bytes], log: Path, port: int) -> bool:
    return serving(process, log, port)


def test_given_no_login_when_flower_starts_then_it_refuses_in_one_line(tmp_path: Path) -> None:
    # Given no FLOWER_BASIC_AUTH, no FLOWER_AUTH and no AIPOOL_ALLOW_ANONYMOUS
    port = free_port()
    with _flower(tmp_path, f"--port={port}") as (process, log):
        # When Flower starts
        code = process.wait(timeout=30)
    # Then it stops at once, saying why and both ways out, and never listened
    assert code == 1
    lines = log.read_text().strip().splitlines()
    assert lines == [
        "aipool: Flower has no login and would serve the pool to anyone who reaches it: set "
        "FLOWER_BASIC_AUTH=user:password in its environment (or FLOWER_AUTH for OAuth), or set "
        "AIPOOL_ALLOW_ANONYMOUS=1 to serve it without one"
    ]
    assert listening_addresses(port) == set()


def test_given_its_port_taken_when_flower_starts_then_it_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    import socket

    # Given the port Flower is told to serve on, taken (871a594: tornado's traceback)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with _flower(tmp_path, f"--port={port}", FLOWER_BASIC_AUTH="ops:pw") as (process, log):
            code = process.wait(timeout=60)
    # Then it stops, naming the address and why, before saying it serves
    assert code == 1
    assert log.read_text().strip().splitlines() == [
        f"aipool: Flower cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_given_a_login_and_no_address_when_flower_starts_then_it_serves_loopback_and_says_so(
    tmp_path: Path,
) -> None:
    port = free_port()
    with _flower(tmp_path, f"--port={port}", FLOWER_BASIC_AUTH="ops:pw") as (process, log):
        eventually(lambda: _serving(process, log, port), 30, "flower serving", interval=0.1)
        # Then it listens on loopback only, and its first line says where, with a login
        assert listening_addresses(port) == {"127.0.0.1"}
        text = log.read_text()
        assert text.startswith(
            f"aipool: Flower serving on http://127.0.0.1:{port}/ (login required)\n"
        )
        assert f"Visit me at http://127.0.0.1:{port}" in text
        assert httpx.get(f"http://127.0.0.1:{port}/tasks", timeout=5).status_code == 401
        # the metrics too (no metrics token here: the login only)
        metrics = f"http://127.0.0.1:{port}/metrics"
        assert httpx.get(metrics, timeout=5).status_code == 401
        assert httpx.get(metrics, auth=("ops", "pw"), timeout=5).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/healthcheck", timeout=5).status_code == 200


def test_given_an_address_when_flower_starts_then_it_serves_there(tmp_path: Path) -> None:
    # Given the address compose and Kubernetes give it (their ports are guarded elsewhere)
    port = free_port()
    with _flower(tmp_path, "--address=0.0.0.0", f"--port={port}", FLOWER_BASIC_AUTH="ops:pw") as (
        process,
        log,
    ):
        eventually(lambda: _serving(process, log, port), 30, "flower serving", interval=0.1)
        assert listening_addresses(port) == {"0.0.0.0"}
        assert f"aipool: Flower serving on http://0.0.0.0:{port}/ (login required)" in (
            log.read_text()
        )


def test_given_anonymity_asked_for_when_flower_starts_then_it_serves_anyone_and_says_so(
    tmp_path: Path,
) -> None:
    port = free_port()
    with _flower(tmp_path, f"--port={port}", AIPOOL_ALLOW_ANONYMOUS="1") as (process, log):
        eventually(lambda: _serving(process, log, port), 30, "flower serving", interval=0.1)
        assert httpx.get(f"http://127.0.0.1:{port}/tasks", timeout=5).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
        assert listening_addresses(port) == {"127.0.0.1"}
        assert "WITHOUT a login (AIPOOL_ALLOW_ANONYMOUS=1)" in log.read_text()


def test_given_a_redis_behind_sentinel_when_flower_shows_queues_then_it_reads_them_from_the_master(
    tmp_path: Path, sentinel_set: Callable[..., SentinelSet]
) -> None:
    # Given the pool on a master with a replica and three sentinels, and a worker on router and
    # claude
    redis = sentinel_set()
    worker = Worker(
        worker_env(**redis.env, **{"DATABASE_URL": TEST_DATABASE_URL}),
        queues=("router", "claude"),
        concurrency=1,
    )
    try:
        with Producer(redis.url, redis.master) as probe:
            worker.wait_ready(probe.app)
        port = free_port()
        with _flower(tmp_path, f"--port={port}", FLOWER_BASIC_AUTH="ops:pw", **redis.env) as (
            process,
            log,
        ):
            eventually(lambda: _serving(process, log, port), 30, "flower serving", interval=0.1)

            def lengths() -> dict[str, int]:
                response = httpx.get(
                    f"http://127.0.0.1:{port}/api/queues/length", auth=("ops", "pw"), timeout=10
                )
                assert response.status_code == 200, response.text
                queues = response.json()["active_queues"]
                return {q["name"]: q["messages"] for q in queues}

            # (once Flower has heard which queues the worker consumes; then the worker stops, so
            # that what waits stays waiting)
            eventually(lambda: {"router", "claude"} <= set(lengths()), 30, "queues heard of")
            worker.stop()
            redis.client().lpush("claude", "waiting-1", "waiting-2")
            # When an operator asks Flower for the queues' lengths (its Broker view)
            # Then it reads them through the sentinels from the master, not "broker is not
            # supported"
            shown = eventually(lambda: (q := lengths())["claude"] == 2 and q, 30, "claude's 2")
            assert shown["router"] == 0
            # And the answers stay withheld: Flower gets no result backend on sentinel:// either
            withheld = httpx.get(
                f"http://127.0.0.1:{port}/api/task/result/any", auth=("ops", "pw"), timeout=10
            )
            assert withheld.status_code == 503
    finally:
        worker.stop()


def test_given_a_flower_that_lists_its_metrics_elsewhere_when_guarded_then_it_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a Flower whose URL table has no (path, Metrics) entry to guard (an upgrade moved it)
    from flower import urls
    from flower.views.monitor import Metrics

    from aipool.errors import PoolUnavailable
    from workers.flower import guard_metrics

    kept = [e for e in urls.handlers if not (isinstance(e, tuple) and e[1] is Metrics)]
    monkeypatch.setattr(urls, "handlers", kept)
    # Then guarding it stops the start rather than serve the metrics to anyone
    with pytest.raises(PoolUnavailable, match="/metrics is not where this pool guards it"):
        guard_metrics()


def test_given_its_redis_gone_when_flower_is_told_to_stop_then_it_exits_within_seconds(
    tmp_path: Path,
) -> None:
    import signal
    import time

    from tests.support.services import RedisServer

    # Given Flower watching a pool whose Redis then goes away (Flower keeps asking the workers to
    # send events every 5 s; each ask now retries the lost broker)
    redis_server = RedisServer().start()
    port = free_port()
    urls = dict.fromkeys(
        ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"), redis_server.url
    )
    try:
        with _flower(tmp_path, f"--port={port}", FLOWER_BASIC_AUTH="ops:pw", **urls) as (
            process,
            log,
        ):
            eventually(lambda: _serving(process, log, port), 30, "flower serving", interval=0.1)
            time.sleep(4)  # its first asks answered
            redis_server.crash()
            time.sleep(6)  # an ask since, retrying the broker
            # When its supervisor stops it (SIGTERM: Kubernetes deleting the pod, compose down)
            stopped_at = time.monotonic()
            process.send_signal(signal.SIGTERM)
            # Then it exits within seconds, as with its broker up, and says why it did not wait
            # (it waited for the broker until killed: the pod's whole grace period, every time)
            assert process.wait(timeout=20) == 0
            assert time.monotonic() - stopped_at < 12
            assert "without waiting for the broker" in log.read_text()
    finally:
        redis_server.stop()
