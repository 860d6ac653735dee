"""A worker or beat with settings it cannot trust stops before it starts, naming the variable; one
with a quota below ADR-006's starts and says so once."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.conftest import worker_env
from tests.support.beat import Beat
from tests.support.pool import Worker

pytestmark = pytest.mark.integration

REFUSAL = (
    "aipool: settings refused: AIPOOL_GEMINI_RPN is not a setting (did you mean AIPOOL_GEMINI_RPM?)"
)


def _exit_code(process: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the process kept running with a misspelled setting") from None


def test_a_worker_with_a_misspelled_limit_exits_naming_it() -> None:
    # Given AIPOOL_GEMINI_RPN=5 in a Gemini worker's environment (meant: AIPOOL_GEMINI_RPM)
    worker = Worker(worker_env(AIPOOL_GEMINI_RPN="5"), queues=("gemini",), concurrency=1)
    try:
        # When it starts, then it exits with code 1 and one line naming the variable
        assert _exit_code(worker.process) == 1
        assert REFUSAL in worker.log().splitlines()
        assert "Traceback" not in worker.log()
        assert "ready" not in worker.log()
    finally:
        worker.stop()


def test_beat_with_a_misspelled_limit_exits_naming_it() -> None:
    beat = Beat(worker_env(AIPOOL_GEMINI_RPN="5"))
    try:
        assert _exit_code(beat.process) == 1
        assert REFUSAL in beat.log().splitlines()
        assert "Traceback" not in beat.log()
    finally:
        beat.stop()


def test_a_worker_with_a_quota_below_adr_006s_starts_and_says_so_once(celery_app) -> None:  # type: ignore[no-untyped-def]
    # Given Gemini's rpm set to 5, below ADR-006's 10
    worker = Worker(worker_env(AIPOOL_GEMINI_RPM="5"), queues=("gemini",), concurrency=1)
    try:
        # When the worker starts, then it serves, and its log says once that the limit is low
        worker.wait_ready(celery_app)
        deadline = time.monotonic() + 10
        while "below ADR-006" not in worker.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        notes = [line for line in worker.log().splitlines() if "below ADR-006" in line]
        assert len(notes) == 1, worker.log()
        assert "AIPOOL_GEMINI_RPM=5 is below ADR-006's 10 for gemini: accepted" in notes[0]
    finally:
        worker.stop()


@pytest.mark.parametrize(
    ("row", "refused"),
    [
        # input_per_1K, meant: input_per_1k
        ('input_per_1K = "0.001"', "unknown key 'input_per_1K' (did you mean 'input_per_1k'?)"),
        # accepted before (issue #40): the worker served, and every priced view then failed
        # with decimal.InvalidOperation
        (
            'input_per_1k = "1e30"',
            ".input_per_1k = '1e30' is above the ceiling of 10 USD per 1,000 tokens",
        ),
    ],
)
def test_a_worker_with_a_bad_price_exits_naming_the_file_and_key(tmp_path, row, refused) -> None:  # type: ignore[no-untyped-def]
    # Given a price file with a misspelt key or an absurd price
    prices = tmp_path / "prices.toml"
    prices.write_text(f"[gemini]\n{row}\n", encoding="utf-8")
    worker = Worker(worker_env(AIPOOL_PRICES_FILE=str(prices)), queues=("gemini",), concurrency=1)
    try:
        # When it starts, then it exits with code 1 and one line naming the file and the key
        assert _exit_code(worker.process) == 1
        refusal = f"aipool: settings refused: AIPOOL_PRICES_FILE: {prices}: [gemini]"
        lines = [line for line in worker.log().splitlines() if line.startswith(refusal)]
        assert len(lines) == 1 and refused in lines[0], worker.log()
        assert "Traceback" not in worker.log()
        assert "ready" not in worker.log()
    finally:
        worker.stop()


def test_a_worker_whose_redis_keeps_nothing_on_disk_warns_once(celery_app) -> None:  # type: ignore[no-untyped-def]
    # Given: the test Redis, which runs with --save "" --appendonly no
    worker = Worker(worker_env(), queues=("gemini",), concurrency=1)
    try:
        # When the worker starts, then its log says once what a restart of that Redis loses
        worker.wait_ready(celery_app)
        deadline = time.monotonic() + 10
        while "keeps nothing on disk" not in worker.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        warnings = [line for line in worker.log().splitlines() if "keeps nothing on disk" in line]
        assert len(warnings) == 1, worker.log()
        assert "usage records not yet drained" in warnings[0]
    finally:
        worker.stop()


def test_a_worker_whose_visibility_timeout_is_within_the_hard_limit_exits_naming_both() -> None:
    # Given a visibility timeout of 100 s under the default hard limit of 120 s: a hop still
    # running at 100 s would be given to a second worker
    worker = Worker(worker_env(AIPOOL_VISIBILITY_TIMEOUT="100"), queues=("gemini",), concurrency=1)
    try:
        # When it starts, then it exits with one line naming both values, and no traceback
        assert _exit_code(worker.process) == 1
        refusal = [line for line in worker.log().splitlines() if line.startswith("aipool:")]
        assert len(refusal) == 1, worker.log()
        assert "AIPOOL_VISIBILITY_TIMEOUT=100: must exceed the hard limit " in refusal[0]
        assert "AIPOOL_TASK_TIME_LIMIT=120" in refusal[0]
        assert "Traceback" not in worker.log()
    finally:
        worker.stop()


def _metered(tmp_path, **extra: str) -> tuple[Worker, int]:  # type: ignore[no-untyped-def]
    """A Gemini worker serving metrics on a free port (returned with it), with ``extra`` in its
    environment and no metrics token unless ``extra`` gives one."""
    from tests.support.services import free_port

    port = free_port()
    env = worker_env(PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom"), AIPOOL_METRICS_PORT=str(port))
    for name in ("AIPOOL_METRICS_TOKEN", "AIPOOL_METRICS_TOKEN_FILE", "AIPOOL_ALLOW_ANONYMOUS"):
        env.pop(name, None)
    env["AIPOOL_SECRETS_DIR"] = str(tmp_path / "no-secrets")
    env.update(extra)
    return Worker(env, queues=("gemini",), concurrency=1), port


def test_a_worker_serving_metrics_without_a_token_exits_naming_the_settings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Given a worker with metrics on (PROMETHEUS_MULTIPROC_DIR) and no AIPOOL_METRICS_TOKEN
    worker, _ = _metered(tmp_path)
    try:
        # When it starts, then it exits with code 1 and one line naming the token and the way to
        # serve anyone, instead of serving the pool's metrics to whoever reaches the port
        assert _exit_code(worker.process) == 1
        refusal = [line for line in worker.log().splitlines() if line.startswith("aipool:")]
        assert len(refusal) == 1, worker.log()
        assert "AIPOOL_METRICS_TOKEN" in refusal[0], refusal
        assert "AIPOOL_ALLOW_ANONYMOUS=1" in refusal[0], refusal
        assert "Traceback" not in worker.log()
        assert "ready" not in worker.log()
    finally:
        worker.stop()


def test_a_worker_allowed_to_serve_anyone_serves_metrics_and_says_so(celery_app, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import httpx

    # Given a worker with metrics on, no token, and AIPOOL_ALLOW_ANONYMOUS=1
    worker, port = _metered(tmp_path, AIPOOL_ALLOW_ANONYMOUS="1")
    try:
        # When it starts, then anyone reads its metrics, and its log says they are served so
        worker.wait_ready(celery_app)
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 200
        deadline = time.monotonic() + 10
        while "WITHOUT a login" not in worker.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        lines = [line for line in worker.log().splitlines() if f":{port}/metrics" in line]
        assert len(lines) == 1 and "WITHOUT a login (AIPOOL_ALLOW_ANONYMOUS=1)" in lines[0]
    finally:
        worker.stop()


def test_a_worker_whose_metrics_port_is_taken_exits_naming_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import socket

    # Given a worker with metrics on and its token, on a port another process listens on
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("0.0.0.0", 0))
        holder.listen()
        port = holder.getsockname()[1]
        worker, _ = _metered(
            tmp_path, AIPOOL_METRICS_PORT=str(port), AIPOOL_METRICS_TOKEN="metrics-t0ken"
        )
        try:
            # When it starts, then it exits with one line naming the port's setting, where it
            # logged a traceback and served its queues with no metrics (a liveness probe then
            # restarted it without saying why)
            assert _exit_code(worker.process) == 1
            refusal = [line for line in worker.log().splitlines() if line.startswith("aipool:")]
            assert refusal == [
                f"aipool: the worker's metrics endpoint cannot listen on 0.0.0.0:{port}: "
                f"Address already in use (AIPOOL_METRICS_HOST=0.0.0.0, AIPOOL_METRICS_PORT={port})"
            ], worker.log()
            assert "Traceback" not in worker.log() and "metrics-t0ken" not in worker.log()
        finally:
            worker.stop()


def test_a_worker_given_a_metrics_address_serves_there_only(celery_app, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import httpx

    # Given a worker told to serve its metrics on one address (AIPOOL_METRICS_HOST), of loopback
    worker, port = _metered(
        tmp_path, AIPOOL_METRICS_HOST="127.0.0.2", AIPOOL_METRICS_TOKEN="metrics-t0ken"
    )
    try:
        # When it starts, then its metrics answer on that address and on no other, and its log
        # says where
        worker.wait_ready(celery_app)
        login = {"Authorization": "Bearer metrics-t0ken"}
        assert httpx.get(f"http://127.0.0.2:{port}/metrics", headers=login, timeout=5).is_success
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/metrics", headers=login, timeout=5)
        deadline = time.monotonic() + 10
        while f"127.0.0.2:{port}/metrics" not in worker.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f"http://127.0.0.2:{port}/metrics (login required)" in worker.log()
    finally:
        worker.stop()


def test_a_worker_given_an_address_it_does_not_have_exits_naming_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Given a metrics address of another host (192.0.2.1 is reserved for documentation)
    worker, port = _metered(
        tmp_path, AIPOOL_METRICS_HOST="192.0.2.1", AIPOOL_METRICS_TOKEN="metrics-t0ken"
    )
    try:
        # When it starts, then it exits with one line naming the address and its setting
        assert _exit_code(worker.process) == 1
        refusal = [line for line in worker.log().splitlines() if line.startswith("aipool:")]
        assert len(refusal) == 1, worker.log()
        assert f"cannot listen on 192.0.2.1:{port}" in refusal[0]
        assert "AIPOOL_METRICS_HOST=192.0.2.1" in refusal[0]
        assert "Traceback" not in worker.log()
    finally:
        worker.stop()
