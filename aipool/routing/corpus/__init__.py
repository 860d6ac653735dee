"""The routing corpus: labelled requests split into train, dev and a frozen test split.

``load(split)`` reads one split; ``TEST_SHA256`` is the digest the frozen test split must have
(checked by the tests). How the corpus was written: :mod:`aipool.routing.corpus.generate` and
``docs/routing.md``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SPLITS = ("train", "dev", "test")


def path(split: str) -> Path:
    """The JSONL file of ``split`` (one of :data:`SPLITS`)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: one of {', '.join(SPLITS)}")
    return HERE / f"{split}.jsonl"


def load(split: str) -> list[dict[str, Any]]:
    """The rows of ``split``, as written."""
    with path(split).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def frozen_digest() -> str:
    """The SHA-256 recorded for the test split when it was frozen."""
    return (HERE / "test.sha256").read_text().split()[0]


def digest(split: str) -> str:
    """The SHA-256 of ``split``'s file as it is now."""
    return hashlib.sha256(path(split).read_bytes()).hexdigest()
