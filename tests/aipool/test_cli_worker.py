"""``aipool worker``'s command line for one worker (``worker_argv``), the one every pool worker is
started with: this command's classes, the demo's worker and the harnesses'."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from celery import Celery
from celery.bin.worker import worker as celery_worker

from aipool.cli.worker import worker_argv


def _every_class_logged(log_dir: Path, words: str) -> bool:
    """Whether the log of every class of ``aipool worker`` (``--log-dir log_dir``) holds
    ``words`` (a class that has not opened its log yet has not)."""
    from aipool.lanes import WORKER_CLASSES

    return all(
        (log := log_dir / f"{name}.log").exists() and words in log.read_text(errors="replace")
        for name in WORKER_CLASSES
    )


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


# -- starts that fail say why, on the terminal -------------------------------------------------


def test_a_redis_that_does_not_answer_stops_aipool_worker_in_one_line(tmp_path) -> None:
    from tests.support.cli import MARK, fresh_env, processes_marked, run_aipool
    from tests.support.services import free_port

    # Given a REDIS_URL where no Redis listens (871a594 printed its five classes and ran for ten
    # minutes, the reason only in var/log)
    url = f"redis://127.0.0.1:{free_port()}/0"
    env = fresh_env(tmp_path / "runtime", REDIS_URL=url, DATABASE_URL=f"sqlite:///{tmp_path}/l.db")
    # When `aipool worker` starts
    done = run_aipool(["worker", "--log-dir", str(tmp_path / "log")], env, tmp_path)
    # Then it says which Redis and why, in one line, and starts no worker
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"aipool: cannot reach Redis at {url}: Error 111 connecting to "
        f"127.0.0.1:{url.split(':')[2].split('/')[0]}. Connection refused"
    ]
    assert done.stdout == ""
    assert processes_marked(env[MARK]) == []


def test_a_refused_setting_stops_aipool_worker_in_one_line(tmp_path, redis_client) -> None:
    from tests.conftest import TEST_REDIS_URL
    from tests.support.cli import fresh_env, run_aipool

    env = fresh_env(tmp_path / "runtime", REDIS_URL=TEST_REDIS_URL, AIPOOL_TIMEOUT_GEMINI="soon")
    done = run_aipool(["worker", "--log-dir", str(tmp_path / "log")], env, tmp_path)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("aipool: settings refused: AIPOOL_TIMEOUT_GEMINI") and done.stdout == ""


def test_metrics_without_a_token_stop_aipool_worker_in_one_line(tmp_path, redis_client) -> None:
    from tests.conftest import TEST_REDIS_URL
    from tests.support.cli import MARK, fresh_env, processes_marked, run_aipool

    # Given metrics on (PROMETHEUS_MULTIPROC_DIR) and no AIPOOL_METRICS_TOKEN: every class would
    # exit saying so, and be started again, until its restarts ran out
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=TEST_REDIS_URL,
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"),
        AIPOOL_SECRETS_DIR=str(tmp_path / "no-secrets"),
    )
    # When `aipool worker` starts
    done = run_aipool(["worker", "--log-dir", str(tmp_path / "log")], env, tmp_path)
    # Then it says so once, naming the token and the way to serve anyone, and starts no worker
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert (
        line.startswith("aipool: the worker's metrics endpoint has no login") and done.stdout == ""
    )
    assert "AIPOOL_METRICS_TOKEN" in line and "AIPOOL_ALLOW_ANONYMOUS=1" in line
    assert processes_marked(env[MARK]) == []


def test_aipool_worker_says_on_screen_when_its_redis_goes_and_comes_back(tmp_path) -> None:
    import sys

    from aipool.children import Child
    from tests.support.cli import MARK, fresh_env, processes_marked
    from tests.support.services import RedisServer
    from tests.support.waiting import eventually

    # Given `aipool worker` serving a Redis of its own, and an unreachable ledger
    server = RedisServer().start()
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=server.url,
        DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/none",
    )
    screen = tmp_path / "screen.txt"
    command = Child(
        "aipool worker",
        [str(Path(sys.executable).parent / "aipool"), "worker", "--log-dir", str(tmp_path)],
        env=env,
        log_path=screen,
        cwd=tmp_path,
    )
    try:
        said = lambda text: text in screen.read_text()  # noqa: E731
        # Then the ledger is said to be unreachable, and the workers start anyway
        eventually(lambda: said("routing: 2 process(es)"), 60, "the workers' start")
        assert "the ledger at postgresql+psycopg://postgres@127.0.0.1:1/none cannot be" in (
            screen.read_text()
        )
        # (ready, not only connected: a worker still starting when its Redis goes may fail a
        # start-up step rather than lose a connection it serves)
        eventually(lambda: _every_class_logged(tmp_path, " ready."), 120, "every worker ready")
        # When its Redis goes away, the terminal says so for each class of worker
        server.crash()
        # (as lost, or as unreachable when the first it noticed was a failed reconnect)
        try:
            eventually(
                lambda: (
                    said("routing: lost the broker's connection")
                    or said("routing: cannot reach the broker at redis://")
                ),
                60,
                "the outage said",
            )
        except TimeoutError as missing:  # what the terminal and the routing worker said instead
            routing = (tmp_path / "routing.log").read_text(errors="replace")[-3000:]
            raise AssertionError(
                f"{missing}\n--- screen:\n{screen.read_text()[-3000:]}\n--- routing:\n{routing}"
            ) from None
        # And when it is back, that each connected again
        server.start()
        eventually(lambda: said("routing: connected again to redis://"), 120, "the return said")
        assert command.alive()
    finally:
        command.stop(grace_s=30)
        server.stop()
    assert processes_marked(env[MARK]) == []


# -- a worker that dies -------------------------------------------------------------------------


def _main_process_of(command_pid: int, name: str) -> int | None:
    """The pid of the ``celery worker`` the command started for class ``name``, if running."""

    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[-1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == command_pid and any(a.startswith(f"{name}@".encode()) for a in argv):
            return int(entry.name)
    return None


def test_aipool_worker_starts_a_dead_class_again_alone_up_to_its_bound(tmp_path) -> None:
    import os
    import signal
    import sys

    from aipool.children import Child
    from tests.support.cli import MARK, fresh_env, processes_marked
    from tests.support.services import RedisServer
    from tests.support.waiting import eventually

    # Given `aipool worker` allowed one restart per class in 10 minutes, every class connected
    # (on 0957cfc the first worker to die stopped all five: routing went down with Ollama's)
    server = RedisServer().start()
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=server.url,
        DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/none",
    )
    screen = tmp_path / "screen.txt"
    command = Child(
        "aipool worker",
        [
            str(Path(sys.executable).parent / "aipool"),
            "worker",
            "--log-dir",
            str(tmp_path),
            "--max-restarts",
            "1",
        ],
        env=env,
        log_path=screen,
        cwd=tmp_path,
    )

    def log(name: str) -> str:
        path = tmp_path / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    try:
        eventually(
            lambda: _every_class_logged(tmp_path, "Connected to"), 120, "every worker connected"
        )
        routing = _main_process_of(command.pid, "routing")
        first = _main_process_of(command.pid, "local")
        assert routing and first
        # When the local models' worker is killed
        os.kill(first, signal.SIGKILL)
        # Then the terminal and its log say it stopped and is started again, alone
        said = "worker local stopped (killed by SIGKILL; "
        eventually(lambda: "starting it again" in screen.read_text(), 30, "the restart said")
        text = screen.read_text()
        assert said in text and "(restart 1 of 1 within 10 min)" in text, text
        assert "WARNING/aipool worker] " + said in log("local")
        eventually(lambda: log("local").count("Connected to") >= 2, 120, "the new worker connected")
        second = _main_process_of(command.pid, "local")
        assert second and second != first
        assert _main_process_of(command.pid, "routing") == routing
        assert command.alive() and "stopping the others" not in screen.read_text()
        # When it dies again within the window, the command stops every worker and says why
        os.kill(second, signal.SIGKILL)
        eventually(lambda: not command.alive(), 60, "the command's end")
        text = screen.read_text()
        assert "it was started again 1 time(s) within 10 min already" in text, text
        assert "stopping the others" in text
        assert command.process.returncode == 1
    finally:
        command.stop(grace_s=30)
        server.stop()
    assert processes_marked(env[MARK]) == []


def test_aipool_worker_stopped_while_its_redis_is_down_leaves_no_worker_behind(tmp_path) -> None:
    import contextlib
    import os
    import signal
    import sys

    from aipool.children import Child
    from tests.support.cli import MARK, fresh_env, processes_marked
    from tests.support.services import RedisServer
    from tests.support.waiting import eventually

    # Given `aipool worker` serving a Redis of its own, every class ready, and then the Redis gone
    # (a worker that cannot reach its broker never ends its warm shutdown)
    server = RedisServer().start()
    env = fresh_env(tmp_path / "runtime", REDIS_URL=server.url)
    command = Child(
        "aipool worker",
        [str(Path(sys.executable).parent / "aipool"), "worker", "--log-dir", str(tmp_path)],
        env=env,
        log_path=tmp_path / "screen.txt",
        cwd=tmp_path,
    )
    try:
        eventually(lambda: _every_class_logged(tmp_path, " ready."), 120, "every worker ready")
        server.crash()
        # When it is stopped as Kubernetes stops a pod: SIGTERM, then its group SIGKILLed 30 s on
        # (here 20 s: the command's own grace is 10 s, for every class at once)
        command.stop(grace_s=20)
        # Then no worker of any class outlives it
        assert processes_marked(env[MARK]) == []
    finally:
        command.stop()
        server.stop()
        for pid in processes_marked(env[MARK]):  # what a failure left, not the next test's load
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _free_ports_in_a_row(count: int) -> int:
    """The first of ``count`` consecutive loopback ports nothing listens on."""
    import socket

    for base in range(20_000, 60_000, 97):
        try:
            held = [socket.create_server(("127.0.0.1", base + i)) for i in range(count)]
        except OSError:
            continue
        for sock in held:
            sock.close()
        return base
    raise AssertionError("no free ports in a row")


def test_aipool_worker_gives_each_class_its_own_metrics_directory_and_port(tmp_path) -> None:
    import sys

    import httpx

    from aipool.children import Child
    from aipool.lanes import WORKER_CLASSES
    from tests.support.cli import MARK, fresh_env, processes_marked
    from tests.support.metrics import TOKEN, metrics_env, scrape
    from tests.support.services import RedisServer
    from tests.support.waiting import eventually

    # Given `aipool worker` with metrics on, and the token they ask for: one directory and one port, as compose gives a
    # container (every class once emptied the same directory and all but one lost the port)
    server = RedisServer().start()
    base = _free_ports_in_a_row(len(WORKER_CLASSES))
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=server.url,
        DATABASE_URL="postgresql+psycopg://postgres@127.0.0.1:1/none",
        **metrics_env(tmp_path / "metrics", base),
    )
    screen = tmp_path / "screen.txt"
    argv = [str(Path(sys.executable).parent / "aipool"), "worker", "--log-dir", str(tmp_path)]
    command = Child("aipool worker", argv, env=env, log_path=screen, cwd=tmp_path)
    ports = {name: base + index for index, name in enumerate(WORKER_CLASSES)}

    def serving(port: int) -> bool:
        try:
            return bool(scrape(port))
        except httpx.HTTPError:
            return False

    try:
        # When every class has started
        eventually(lambda: _every_class_logged(tmp_path, " ready."), 120, "every class ready")
        # Then each serves its own port and keeps its samples in a directory of its own, and
        # the terminal says which port is whose
        eventually(lambda: all(serving(p) for p in ports.values()), 30, "every port served")
        text = screen.read_text()
        for name, port in ports.items():
            assert f"{name}: " in text
            assert f"metrics on :{port}/metrics (login required)" in text
            assert (tmp_path / "metrics" / name).is_dir()
            # and its own log says so too, and that they ask for the token every class was given
            # (the line was logged before logging was set up)
            log = (tmp_path / f"{name}.log").read_text()
            assert f":{port}/metrics (login required)" in log and TOKEN not in log
    finally:
        command.stop(grace_s=30)
        server.stop()
    assert processes_marked(env[MARK]) == []
