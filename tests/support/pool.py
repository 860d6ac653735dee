"""The tests' real workers: :class:`aipool.harness.worker.Worker`, which ``bench/run`` starts too,
and the repository's root for tests that run other commands from it."""

from __future__ import annotations

from pathlib import Path

from aipool.harness.worker import ALL_QUEUES, Worker

ROOT = Path(__file__).resolve().parents[2]
#: How long a test waits for a worker it started to answer a ping: a worker imports the provider
#: SDKs first, which on a loaded machine takes longer than the harness's default half minute.
READY_TIMEOUT_S = 90.0

__all__ = ["ALL_QUEUES", "READY_TIMEOUT_S", "ROOT", "Worker"]
