"""Real ``celery worker`` processes for the harnesses: integration tests (never eager mode) and
``bench/run``.

A :class:`Worker` is one ``celery worker`` parent and its prefork pool children. Besides starting
and stopping it, a harness can crash it the way production crashes: SIGKILL one pool child (the
OOM killer picking a process) or the whole worker at once (a node or container lost), and read
its memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from aipool.lanes import QUEUES

#: The checkout the harnesses run from (the project is installed editable): workers start there,
#: so ``-A`` can name an app outside the packages (``bench.plain_app``, the tests' apps).
CHECKOUT = Path(__file__).resolve().parents[2]
ALL_QUEUES = QUEUES
#: Each harness worker is alone on its broker as far as it knows: mingle would wait a second for
#: siblings' state, gossip would track them. Heartbeats stay, for Flower's tests.
_WITHOUT = ("gossip", "mingle")
#: How long :meth:`Worker.wait_ready` pings a worker that logged "ready." before taking its word.
GRACE_S = 5.0


class Worker:
    """One ``celery -A <app> worker`` process (``workers.app`` unless told) consuming ``queues``,
    started with the pool's own worker command (:func:`aipool.cli.worker.worker_argv`)."""

    def __init__(
        self,
        env: dict[str, str],
        queues: tuple[str, ...] = ALL_QUEUES,
        concurrency: int = 2,
        app: str = "workers.app",
        loglevel: str = "INFO",
    ) -> None:
        # Start-up time: the CLI package imports every command (the ledger's SQLAlchemy and
        # Alembic too), paid only by a harness that starts a worker, not by every test session.
        from aipool.cli.worker import worker_argv

        node = f"test-{uuid.uuid4().hex[:8]}"
        # The exact node name (not ``%h``), so wait_ready can ping this worker alone.
        self.name = f"{node}@localhost"
        self.queues = queues
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"aipool-{self.name}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            worker_argv(
                node,
                queues,
                concurrency,
                loglevel,
                app=app,
                host="localhost",
                without=_WITHOUT,
            ),
            cwd=CHECKOUT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Its own process group, so a crash can take the parent and its children in one signal.
            start_new_session=True,
        )

    def wait_ready(self, app: Any, timeout: float = 30.0) -> None:
        """Return once the worker answers a ping through ``app`` (a Celery app on its broker);
        raise, quoting its log, if it exits or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        # A reply later than the ping's wait is dropped: on a loaded machine a ready worker may
        # take over 0.5 s to answer, so each ping waits longer than the one before, up to 4 s.
        wait = 0.5
        # Two CI runs at load 7-11 saw a worker log "ready." and answer no ping in the 20 s
        # after it (a broadcast that reached no subscriber: Redis pub/sub keeps nothing). Its
        # task queues are consumed all the same once it is ready, which is what a test waits
        # for: past GRACE_S of unanswered pings after "ready.", the log's word is taken.
        ready_since: float | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log()}")
            if app.control.ping(destination=[self.name], timeout=wait):
                return
            wait = min(wait * 2, 4.0)
            if ready_since is None and f"{self.name} ready." in self.log():
                ready_since = time.monotonic()
            elif ready_since is not None and time.monotonic() - ready_since > GRACE_S:
                return
        raise TimeoutError(f"worker {self.name} not ready: {self.log()}")

    def log(self) -> str:
        """The end of the worker's log (empty once stopped: :meth:`stop` removes it)."""
        if not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-4000:]

    @property
    def pid(self) -> int:
        """The worker's parent (main) process id."""
        return self.process.pid

    def children(self) -> list[int]:
        """Process ids of the pool children now running under the parent."""
        path = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        try:
            return [int(pid) for pid in path.read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            return []

    def kill_child(self, pid: int | None = None) -> int:
        """SIGKILL one pool child (``pid``, or the first one); the parent stays up.

        Returns the killed child's pid. The parent replaces the child and, with late acks and
        ``task_reject_on_worker_lost``, gives its message back to the queue.
        """
        children = self.children()
        if pid is None:
            if not children:
                raise RuntimeError(f"worker {self.name} has no pool child: {self.log()}")
            pid = children[0]
        elif pid not in children:
            raise ValueError(f"{pid} is not a pool child of worker {self.name}")
        os.kill(pid, signal.SIGKILL)
        return pid

    def wait_children(self, count: int, timeout: float = 15.0) -> list[int]:
        """Wait until ``count`` pool children run (after a kill, until one replaced it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            children = self.children()
            if len(children) >= count:
                return children
            time.sleep(0.05)
        raise TimeoutError(f"worker {self.name} has {self.children()} children, wanted {count}")

    def kill(self) -> None:
        """SIGKILL the parent and every child at once: nothing gets to ack, requeue or clean up."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def rss_bytes(self) -> int:
        """Resident memory of the parent and its pool children together."""
        total = 0
        for pid in (self.pid, *self.children()):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except (FileNotFoundError, ProcessLookupError):
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def alive(self) -> bool:
        """Whether the parent process is still running."""
        return self.process.poll() is None

    def stop(self) -> None:
        """Warm shutdown (SIGTERM), then SIGKILL of the whole group if it takes over 15 s; the
        log file is removed."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        # Children a killed parent left behind must not outlive the test.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self._log.close()
        # Nor its log the run: a failure has quoted the log's end already (``log()``).
        self.log_path.unlink(missing_ok=True)
