"""Usage records held while a task runs, to ride with the task's own result write.

A hop that answers writes its result to Redis anyway (Celery's backend: SETEX and PUBLISH in one
pipeline). Its ledger record costs no round trip of its own when it goes into that pipeline, and a
round trip is most of what the ledger costs a hop. So while a worker runs a task, the records the
hop makes wait here: the result write takes them (:mod:`workers.result_backend`), and whatever is
left when the task ends (a hop that forwarded the request, a result write that failed, a backend
on another Redis) is pushed on its own, exactly as it would have been without the outbox.

Outside a task (a producer routing with ``submit()``, a test) nothing is held: records go to Redis
at once. A worker killed between its call and its result write loses the held record together with
the result; the message is redelivered and the attempt is recorded then (for a limited provider,
the answer kept beside its reservation is recorded without a second call).
"""

from __future__ import annotations

import threading

from aipool.ledger.record import UsageRecord


class Outbox:
    """The records of the tasks running in this process, until a write takes them.

    Thread-safe: with a thread pool, a task's records may ride with another task's result, which
    is as good (they reach the same list). ``holding`` counts running tasks, so a task that ends
    while another still runs does not stop the other's records from being held.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[UsageRecord] = []
        self._tasks = 0

    @property
    def holding(self) -> bool:
        """Whether records are held now (a task is running in this process)."""
        return self._tasks > 0

    def task_started(self) -> None:
        with self._lock:
            self._tasks += 1

    def task_ended(self) -> list[UsageRecord]:
        """The task is over: what is still held, for the caller to push on its own."""
        with self._lock:
            self._tasks = max(0, self._tasks - 1)
            taken, self._records = self._records, []
        return taken

    def hold(self, record: UsageRecord) -> bool:
        """Keep ``record`` for the next write; False (not kept) when no task is running."""
        with self._lock:
            if self._tasks == 0:
                return False
            self._records.append(record)
            return True

    def take(self) -> list[UsageRecord]:
        """Everything held, for a write that sends it."""
        with self._lock:
            taken, self._records = self._records, []
        return taken

    def give_back(self, records: list[UsageRecord]) -> None:
        """Records a write took and could not send: held again, oldest first."""
        if records:
            with self._lock:
                self._records[:0] = records


#: The outbox of this process (a prefork child runs one task at a time).
OUTBOX = Outbox()
