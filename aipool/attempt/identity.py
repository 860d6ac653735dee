"""The pool's name for a request's journey: the task id and the request, digested.

A producer picks the task id, and may pick it twice: a retry after a lost publish confirm sends
the same message again (one request: it must pay once), and a careless producer reuses an id for
another request (two requests: the second must never receive the first one's answer, so it is
refused its id: :mod:`aipool.attempt.task_ids`). Naming the journey after both tells them apart:
a duplicate of one message has the same name, a reused id with another request has another. The
name is a BLAKE2b digest (128 bits) of the task id and the request as canonical JSON; it holds no prompt text, and nothing can be read back from it
short of guessing the whole request together with its random task id.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def journey_id(request_id: str, request: Any) -> str:
    """The journey id of ``request`` (the producer's raw JSON request) sent as ``request_id``."""
    digest = hashlib.blake2b(digest_size=16, person=b"aipool-journey")
    digest.update(request_id.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest.update(canonical.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
