"""The tests' real workers: :class:`aipool.harness.worker.Worker`, which ``bench/run`` starts too,
and the repository's root for tests that run other commands from it."""

from __future__ import annotations

from pathlib import Path

from aipool.harness.worker import ALL_QUEUES, Worker

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ALL_QUEUES", "ROOT", "Worker"]
