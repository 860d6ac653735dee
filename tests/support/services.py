"""Private Redis and PostgreSQL servers a test may crash, restart and stop at will.

The shared servers (Redis on 6379, PostgreSQL on 5432) serve every test and every engineer: a
test that kills or restarts a server starts its own here, on a free loopback port in a directory
of its own, and stops it at the end. Both servers keep their port across restarts, so clients
configured with the URL reconnect to the new process as they would in production.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from tests.support.waiting import eventually

POSTGRES_BIN = Path(
    os.environ.get("AIPOOL_TEST_POSTGRES_BIN")
    or next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)), "/usr/bin")
)


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A ``redis-server`` of the test's own.

    ``appendonly=False`` is a Redis that keeps nothing on disk (``--save "" --appendonly no``,
    what this machine's shared Redis does): a restart loses every key. ``appendonly=True`` keeps an
    append-only file (``appendfsync everysec``), so a restart replays what was written.
    """

    def __init__(self, *, appendonly: bool = False) -> None:
        self.appendonly = appendonly
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="aipool-redis-"))
        self.process: subprocess.Popen[bytes] | None = None
        self._clients: list[redis.Redis] = []

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``: the same for every process of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self, **options: Any) -> redis.Redis:
        """A new redis-py client, closed when the server stops."""
        client = redis.Redis.from_url(self.url, **options)
        self._clients.append(client)
        return client

    def start(self) -> RedisServer:
        """Start the server and wait until it answers PING."""
        args = [
            shutil.which("redis-server") or "redis-server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        eventually(self._answers, 10.0, f"redis-server on port {self.port}")
        return self

    def crash(self) -> None:
        """SIGKILL the server: what was not on disk is gone, clients see their sockets close."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def restart(self, down_for: float = 0.0) -> None:
        """Crash the server and start a new one on the same port and directory ``down_for``
        seconds later (a real restart takes seconds; clients retrying for less never notice)."""
        self.crash()
        time.sleep(down_for)
        self.start()

    def stop(self) -> None:
        """Stop the server for good, close its clients and remove its directory."""
        self.crash()
        for client in self._clients:
            client.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"redis-server exited: {self._log()}")
        client = redis.Redis.from_url(self.url, socket_connect_timeout=0.5, socket_timeout=0.5)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def _log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""


class PostgresServer:
    """A PostgreSQL cluster of the test's own (``initdb`` in a temporary directory, trust auth).

    PostgreSQL refuses to run as root, so when the tests run as root the cluster belongs to the
    ``postgres`` system user and every server command runs as that user.
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="aipool-pg-"))
        self.data = self.directory / "data"
        self._user: str | None = None
        if os.geteuid() == 0:
            self._user = "postgres"
            owner = pwd.getpwnam(self._user)
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
        self._initialised = False

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of ``database`` on this server."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    @property
    def server_url(self) -> str:
        """The server's URL without a database (what ``scratch_database`` takes)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}"

    def start(self) -> PostgresServer:
        """Create the cluster on first use, then start the server and wait until it accepts."""
        if not self._initialised:
            self._run(
                "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E",
                "UTF8",
            )  # fmt: skip
            self._initialised = True
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.directory / "pg.log"),
            "-w", "-t", "30", "start",
        )  # fmt: skip
        eventually(self.is_ready, 30.0, f"postgres on port {self.port}")
        return self

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: clients are disconnected, the data stays)."""
        if self.is_running():
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")

    def destroy(self) -> None:
        """Stop the server at once and remove the cluster."""
        if self._initialised:
            self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)

    def is_running(self) -> bool:
        """Whether the cluster's postmaster is running."""
        if not self._initialised:
            return False
        result = self._run("pg_ctl", "-D", str(self.data), "status", check=False)
        return result.returncode == 0

    def is_ready(self) -> bool:
        """Whether the server accepts connections."""
        result = subprocess.run(
            [str(POSTGRES_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
            capture_output=True,
            check=False,
        )
        return result.returncode == 0

    def _run(
        self, program: str, *args: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        command = [str(POSTGRES_BIN / program), *args]
        if self._user is not None:
            command = ["runuser", "-u", self._user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if check and result.returncode != 0:
            raise RuntimeError(f"{program} failed: {result.stdout}{result.stderr}")
        return result
