"""Processes a command starts and must stop: the embedded Redis, the demo's worker.

Each child runs in a session of its own, so a Ctrl-C at the terminal reaches only the command,
which then stops its children in order (workers before the Redis they talk to) instead of every
process dying at once; and stopping a child stops its whole process group (a worker's pool
processes too). :func:`signals_end_the_command` turns SIGTERM and SIGHUP into an exit, so the same
``finally`` blocks run whether the command finishes, fails, is interrupted or is terminated.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType

#: Seconds a child has to exit after SIGTERM before its whole group is killed.
STOP_GRACE_S = 10.0


class Child:
    """One child process started in a new session, its output sent to ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.log_path = log_path
        log = log_path.open("ab") if log_path is not None else subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(
                list(argv),
                env=dict(env) if env is not None else None,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if not isinstance(log, int):
                log.close()

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        """Whether the child has not exited yet."""
        return self.process.poll() is None

    def terminate(self) -> None:
        """Ask the child to exit (SIGTERM) without waiting: :meth:`stop` waits."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def stop(self, grace_s: float = STOP_GRACE_S, sig: int = signal.SIGTERM) -> int | None:
        """Ask the child to exit (``sig``), then kill its group after ``grace_s``; returns its
        exit code. Safe to call twice and after the child exited by itself."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=grace_s)
        # The group outlives its leader when a pool process is still running: kill what is left.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=grace_s)
        return self.process.returncode

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the child's output, for an error message."""
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]


def _exit_on(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


#: Whether Ctrl-C reached the command (within :func:`signals_end_the_command`).
_interrupted = False


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if Ctrl-C came and was swallowed: Python drops an exception
    raised inside a weakref callback or a ``__del__`` (an import's module lock, a closing client),
    so a command that does much would go on after the Ctrl-C. Call it between steps."""
    if _interrupted:
        raise KeyboardInterrupt


@contextlib.contextmanager
def signals_end_the_command() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise ``SystemExit`` (128 + signal) like Ctrl-C raises
    ``KeyboardInterrupt``, so cleanup code runs; Ctrl-C is also remembered, for
    :func:`raise_if_interrupted`. The previous handlers come back afterwards."""
    global _interrupted
    _interrupted = False
    previous = {sig: signal.signal(sig, _exit_on) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def wait_until(predicate: Callable[[], object], timeout_s: float, interval_s: float = 0.05) -> bool:
    """Poll ``predicate()`` until it is true or ``timeout_s`` passed; returns its last value."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
