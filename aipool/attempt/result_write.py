"""The producer's result, written by the ``finish`` that records the answer (issue #44).

An answered hop used to make two writes to the same Redis: ``finish`` (the attempt's outcome),
then Celery's result (``store_result.lua``), a second round trip. Where the result backend is the
attempts' Redis, ``finish`` writes the result too, atomically, by the same rules (never over a
``SUCCESS``; the hop's held usage records pushed with it), and Celery's own store of that task's
result is then skipped (:func:`written_already`): its chord and group handling go on as usual.

The runner knows nothing of Celery: a task hands it a :class:`Writer` for the request it runs
(:func:`writing`), which encodes the result as the backend would; without one (a producer's
``submit()``, a test, a backend elsewhere) the result is Celery's to write, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ResultWrite:
    """A result as the backend stores it: its key, the encoded value, seconds to keep it (0: for
    ever) and the usage records (JSON) that ride with it."""

    task_id: str
    key: str
    value: str
    expires: int
    records: tuple[str, ...] = ()


class Writer(Protocol):
    """The result backend's side, for one task."""

    def prepare(self, task_id: str, result: dict[str, Any]) -> ResultWrite | None:
        """The write of ``result``, or ``None`` when the backend must write it itself."""

    def missed(self, write: ResultWrite) -> None:
        """``write`` was not made: what it carried (held records) goes back to be sent later."""


_WRITER: ContextVar[Writer | None] = ContextVar("aipool_result_writer", default=None)
#: The task id whose result ``finish`` wrote, until the backend's store for it asks.
_WRITTEN: ContextVar[str | None] = ContextVar("aipool_result_written", default=None)


@contextmanager
def writing(writer: Writer | None) -> Iterator[None]:
    """Let a ``finish`` run inside this block write its answer's result with ``writer``."""
    _WRITTEN.set(None)  # a mark left by an earlier task of this process says nothing of this one
    token = _WRITER.set(writer)
    try:
        yield
    finally:
        _WRITER.reset(token)


def prepare(task_id: str, result: dict[str, Any]) -> ResultWrite | None:
    """The write ``finish`` makes of ``result``, if the running task allows one."""
    writer = _WRITER.get()
    return None if writer is None else writer.prepare(task_id, result)


def settled(write: ResultWrite, written: bool) -> None:
    """``finish`` ran with ``write``: mark it written, or give back what it carried."""
    if written:
        _WRITTEN.set(write.task_id)
        return
    writer = _WRITER.get()
    if writer is not None:
        writer.missed(write)


def written_already(task_id: str) -> bool:
    """Whether ``finish`` wrote ``task_id``'s result: the backend's next store of it is skipped
    (asked once; the mark is then gone)."""
    if _WRITTEN.get() != task_id:
        return False
    _WRITTEN.set(None)
    return True
