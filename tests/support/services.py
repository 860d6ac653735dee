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

    def __init__(self, *, appendonly: bool = False, replica_of: int | None = None) -> None:
        self.appendonly = appendonly
        #: The port of the master this server replicates, if it is a replica.
        self.replica_of = replica_of
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
        if self.replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(self.replica_of)]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        eventually(self.answers, 10.0, f"redis-server on port {self.port}")
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

    def answers(self) -> bool:
        """Whether the server answers PING now (raises if its process exited)."""
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"redis-server exited: {self._log()}")
        return _pings(self.port)

    def _log(self) -> str:
        path = self.directory / "redis.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""


def _pings(port: int) -> bool:
    """Whether a server (Redis or sentinel) answers PING on ``port`` now."""
    client = redis.Redis(
        host="127.0.0.1", port=port, socket_connect_timeout=0.5, socket_timeout=0.5
    )
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def _ask(port: int, question: Any) -> Any:
    """``question(client)`` asked of the Redis on ``port`` with a client closed afterwards."""
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1.0)
    try:
        return question(client)
    finally:
        client.close()


class SentinelServer:
    """One ``redis-server --sentinel`` watching the master on ``master_port`` as ``master``,
    with a quorum of ``quorum`` and ``down_after_ms`` before it calls the master down."""

    def __init__(self, master: str, master_port: int, *, quorum: int, down_after_ms: int) -> None:
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="aipool-sentinel-"))
        self.process: subprocess.Popen[bytes] | None = None
        # Sentinel rewrites its configuration file as it learns (replicas, other sentinels, the
        # new master): it must be a file of its own.
        (self.directory / "sentinel.conf").write_text(
            f"port {self.port}\n"
            "bind 127.0.0.1\n"
            f"dir {self.directory}\n"
            f"logfile {self.directory / 'sentinel.log'}\n"
            f"sentinel monitor {master} 127.0.0.1 {master_port} {quorum}\n"
            f"sentinel down-after-milliseconds {master} {down_after_ms}\n"
            f"sentinel failover-timeout {master} {max(3 * down_after_ms, 3000)}\n"
            f"sentinel parallel-syncs {master} 1\n"
        )

    def start(self) -> SentinelServer:
        """Start the sentinel and wait until it answers PING."""
        args = [
            shutil.which("redis-server") or "redis-server",
            str(self.directory / "sentinel.conf"),
            "--sentinel",
        ]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        eventually(self._answers, 10.0, f"sentinel on port {self.port}")
        return self

    def client(self) -> redis.Redis:
        """A client on this sentinel (for SENTINEL commands); close it when done."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1.0)

    def stop(self) -> None:
        """Stop the sentinel for good and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            log = self.directory / "sentinel.log"
            raise RuntimeError(
                f"sentinel exited: {log.read_text()[-2000:] if log.exists() else ''}"
            )
        return _pings(self.port)


class SentinelSet:
    """A master, one replica and three sentinels, all real processes on loopback: the smallest
    Redis that fails over (two sentinels of three must agree the master is down).

    ``url`` is the ``sentinel://`` URL of the set and ``master`` the name the sentinels know the
    master by (``AIPOOL_REDIS_SENTINEL_MASTER``). Both Redis servers keep an append-only file.
    """

    def __init__(self, master: str = "aipool", *, down_after_ms: int = 1000) -> None:
        self.master = master
        self.down_after_ms = down_after_ms
        self.servers = [RedisServer(appendonly=True)]
        self.servers.append(RedisServer(appendonly=True, replica_of=self.servers[0].port))
        self.sentinels = [
            SentinelServer(master, self.servers[0].port, quorum=2, down_after_ms=down_after_ms)
            for _ in range(3)
        ]
        self._clients: list[redis.Redis] = []

    @property
    def url(self) -> str:
        """``sentinel://127.0.0.1:<p1>/0;sentinel://127.0.0.1:<p2>/0;...``"""
        return ";".join(f"sentinel://127.0.0.1:{s.port}/0" for s in self.sentinels)

    @property
    def env(self) -> dict[str, str]:
        """The settings a pool process needs to use this set."""
        return {"REDIS_URL": self.url, "AIPOOL_REDIS_SENTINEL_MASTER": self.master}

    def start(self) -> SentinelSet:
        """Start master, replica and sentinels; wait until the replica is in sync. The sentinels
        name the master at once; they learn of each other within seconds (:meth:`kill_master`
        waits for that)."""
        for server in self.servers:
            server.start()
        eventually(self._replica_in_sync, 20.0, "the replica in sync with the master")
        for sentinel in self.sentinels:
            sentinel.start()
        return self

    def client(self, **options: Any) -> redis.Redis:
        """A client on the master that follows it across failovers, closed when the set stops."""
        from aipool.redis.sentinel import master_client

        client: redis.Redis = master_client(
            self.url, self.master, socket_timeout=2.0, socket_connect_timeout=1.0, **options
        )
        self._clients.append(client)
        return client

    def master_port(self) -> int:
        """The port of the master the sentinels name now."""
        client = self.sentinels[0].client()
        try:
            _host, port = client.sentinel_get_master_addr_by_name(self.master)
            return int(port)
        finally:
            client.close()

    def server(self, port: int) -> RedisServer:
        """The server listening on ``port``."""
        (found,) = [s for s in self.servers if s.port == port]
        return found

    def kill_master(self) -> RedisServer:
        """SIGKILL the current master once every sentinel knows the replica and its two peers
        (so that they can agree and promote it); return it (it stays down)."""
        eventually(self._sentinels_agree, 30.0, "every sentinel knowing the replica and its peers")
        master = self.server(self.master_port())
        master.crash()
        return master

    def promoted(self, old_port: int) -> bool:
        """Whether every sentinel names a master other than ``old_port``, and it answers as one."""
        for sentinel in self.sentinels:
            client = sentinel.client()
            try:
                _host, port = client.sentinel_get_master_addr_by_name(self.master)
            except redis.RedisError:
                return False
            finally:
                client.close()
            if int(port) == old_port:
                return False
        role = _ask(self.master_port(), lambda c: c.role())
        return role[0] in (b"master", "master")

    def stop(self) -> None:
        """Stop every process of the set and remove their directories."""
        for client in self._clients:
            client.connection_pool.sentinel_manager.close()  # type: ignore[attr-defined]
            client.close()
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()

    def _replica_in_sync(self) -> bool:
        info = _ask(self.servers[1].port, lambda c: c.info("replication"))
        return info.get("master_link_status") == "up"

    def _sentinels_agree(self) -> bool:
        for sentinel in self.sentinels:
            client = sentinel.client()
            try:
                (state,) = [
                    m for name, m in client.sentinel_masters().items() if name == self.master
                ]
            except (redis.RedisError, ValueError):
                return False
            finally:
                client.close()
            if int(state["num-slaves"]) < 1 or int(state["num-other-sentinels"]) < 2:
                return False
        return True


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
