"""The runtime directory is this user's alone, or nothing in it is used: another user's directory,
or an announcement of theirs, would hand a command their Redis and their ledger (issue #40)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.errors import NoRedis, UnsafeRuntimeDir
from aipool.redis import runtime_dir
from aipool.redis.embedded import EmbeddedRedis, find_running
from tests.support.cli import MARK, ROOT, fresh_env, processes_marked, run_aipool

#: Another user, to own what a test gives another owner: "nobody" on Debian.
NOBODY = 65534


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIPOOL_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.delenv("REDIS_URL", raising=False)
    return tmp_path / "runtime"


def _give_away(*paths: Path) -> None:
    """Make ``paths`` another user's (nobody's): only root can, and the suite runs as root."""
    if os.getuid() != 0:
        pytest.fail("giving a file to another user needs root (the suite runs as root)")
    for path in paths:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


def _refusal(runtime: Path) -> str:
    with pytest.raises(UnsafeRuntimeDir) as refused:
        find_running()
    message = str(refused.value)
    assert "\n" not in message
    return message


def test_a_missing_directory_is_read_as_empty_and_not_created(runtime: Path) -> None:
    assert find_running() is None
    assert not runtime.exists()


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o277], ids=oct)
def test_the_owner_of_a_redis_creates_the_directory_private_whatever_the_umask(
    tmp_path: Path, runtime: Path, umask: int
) -> None:
    old = os.umask(umask)
    try:
        runtime_dir.make_private(runtime)
    finally:
        os.umask(old)
    assert (runtime.stat().st_mode & 0o777, runtime.stat().st_uid) == (0o700, os.getuid())
    assert find_running() is None


@pytest.mark.parametrize("mode", [0o755, 0o777, 0o1777, 0o750, 0o500], ids=oct)
def test_a_directory_others_may_enter_is_refused_naming_it_and_the_fix(
    runtime: Path, mode: int
) -> None:
    runtime.mkdir()
    runtime.chmod(mode)
    message = _refusal(runtime)
    assert message.startswith(f"the runtime directory {runtime} has mode {mode & 0o7777:04o}")
    assert f"run `chmod 700 {runtime}`" in message
    assert "AIPOOL_RUNTIME_DIR" in message


def test_a_directory_of_another_user_is_refused(runtime: Path) -> None:
    # Given another user created the directory first, private to them
    runtime.mkdir(mode=0o700)
    _give_away(runtime)
    # When a command reads it, then it is refused, naming the owner
    message = _refusal(runtime)
    assert message.startswith(
        f"the runtime directory {runtime} belongs to nobody (uid {NOBODY}), not to root (uid 0) "
        "who runs this"
    )
    assert "AIPOOL_RUNTIME_DIR" in message


@pytest.mark.parametrize("target_mine", [False, True])
def test_a_symbolic_link_is_refused_wherever_it_points(
    tmp_path: Path, runtime: Path, target_mine: bool
) -> None:
    # Given the runtime directory is a link, to another user's directory or to one of ours
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if not target_mine:
        _give_away(elsewhere)
    runtime.symlink_to(elsewhere)
    # When a command reads it, then it is refused: whoever can swap a link can swap the Redis
    message = _refusal(runtime)
    assert message.startswith(
        f"the runtime directory {runtime} is a symbolic link (to {elsewhere})"
    )


def test_a_file_in_its_place_is_refused(runtime: Path) -> None:
    runtime.write_text("")
    assert _refusal(runtime).startswith(f"the runtime directory {runtime} is not a directory")


def test_an_announcement_of_another_user_is_refused(runtime: Path) -> None:
    # Given a private directory of ours holding an announcement of another user's
    runtime.mkdir(mode=0o700)
    announcement = runtime / "redis-1.json"
    announcement.write_text("{}")
    _give_away(announcement)
    assert _refusal(runtime).startswith(f"the announcement {announcement} belongs to nobody")


def test_the_owner_refuses_to_start_a_redis_in_an_unsafe_directory(
    tmp_path: Path, runtime: Path
) -> None:
    # Given a runtime directory others may write to
    runtime.mkdir(mode=0o777)
    runtime.chmod(0o777)
    server = EmbeddedRedis(tmp_path / "data", owner="test")
    # When the owner starts its Redis, then it is refused before anything starts
    try:
        with pytest.raises(UnsafeRuntimeDir, match="has mode 0777"):
            server.start()
    finally:
        server.stop()  # a server that did start (the bug) is not left running
    assert server.pid is None and not (tmp_path / "data").exists()
    assert isinstance(UnsafeRuntimeDir(""), NoRedis)


@pytest.fixture
def foreign_redis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """An embedded Redis announced in a runtime directory that then became another user's (as if
    they had created it first and run `aipool redis` in it); its runtime directory and URL."""
    runtime = tmp_path / "shared" / "aipool-runtime"
    monkeypatch.setenv("AIPOOL_RUNTIME_DIR", str(runtime))
    with EmbeddedRedis(tmp_path / "theirs", owner="aipool redis") as running:
        _give_away(runtime, *runtime.iterdir())
        yield runtime, running.redis_url
        for path in (runtime, *runtime.iterdir()):
            os.chown(path, 0, 0)


@pytest.mark.parametrize("args", [["status"], ["config"], ["submit", "hi"]])
def test_a_command_without_redis_url_refuses_another_users_redis_in_one_line(
    tmp_path: Path, foreign_redis: tuple[Path, str], args: list[str]
) -> None:
    runtime, their_url = foreign_redis
    env = fresh_env(runtime)
    # When a command runs without REDIS_URL (before: it adopted their Redis and their ledger)
    done = run_aipool(args, env, tmp_path)
    # Then it stops in one line naming the directory, what is wrong and how to fix it
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr and their_url not in done.stdout
    assert done.stderr.strip() == (
        f"aipool: the runtime directory {runtime} belongs to nobody (uid {NOBODY}), not to root "
        "(uid 0) who runs this, so an embedded Redis announced there could be another user's: "
        "have it removed (its owner or root), or set AIPOOL_RUNTIME_DIR to a directory of your "
        "own with mode 0700"
    )
    assert processes_marked(env[MARK]) == []


def test_a_celery_worker_without_redis_url_refuses_another_users_redis_in_one_line(
    tmp_path: Path, foreign_redis: tuple[Path, str]
) -> None:
    runtime, _ = foreign_redis
    env = fresh_env(runtime)
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "-Q", "router", "-c", "1"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"aipool: the runtime directory {runtime} belongs to nobody (uid {NOBODY}), not to root "
        "(uid 0) who runs this, so an embedded Redis announced there could be another user's: "
        "have it removed (its owner or root), or set AIPOOL_RUNTIME_DIR to a directory of your "
        "own with mode 0700"
    ]
