"""A task id names one request: the first request sent under it claims it.

Results are keyed by the producer's task id (Celery's), so a second request sent under an id
already used would read the first one's answer (:mod:`aipool.attempt.identity` names the two
journeys apart, but the result key cannot). The first hop of a request claims its task id for its
journey (``aipool:task-id:<id>``, kept as long as a result is): a copy of the same request finds
its own claim, another request finds someone else's and is refused (``task_id_reused``), and its
refusal replaces whatever that id's result held (``aipool/attempt/store_result.lua``), so that no
producer holding the id reads an answer that may not be its own. The key holds the journey id (a
digest), never prompt text.

An id ``submit()`` mints itself (a fresh ``uuid4``) is claimed with its message, before
``submit()`` hands the id to anyone (``tasks/client.py``): nobody can hold an id minted a moment
ago, so its claim need not hold the message back a round trip. Where the message goes to the
attempts' Redis, the claim rides in the message's own round trip (:mod:`aipool.redis.riding`);
elsewhere it is sent once the message is out. One that finds another request's claim all the
same (the id read off the queue in between) writes the refusal as above.
"""

from __future__ import annotations

from typing import Any

from aipool.redis.lua import text

#: The error code of a request refused because its task id names another request.
REUSED = "task_id_reused"


def claim_key(request_id: str) -> str:
    """Which journey the task id ``request_id`` names."""
    return f"aipool:task-id:{request_id}"


def take(client: Any, request_id: str, journey_id: str, keep_s: int) -> Any:
    """Send the claim of ``request_id`` for ``journey_id`` (``keep_s`` seconds) on ``client``, a
    client or a pipeline: its reply is true when the id was nobody's."""
    return client.set(claim_key(request_id), journey_id, nx=True, ex=keep_s)


def claim(client: Any, request_id: str, journey_id: str, keep_s: int) -> bool:
    """Claim ``request_id`` for ``journey_id`` for ``keep_s`` seconds; whether the id is this
    journey's (claimed now, or by an earlier copy of the same request)."""
    if take(client, request_id, journey_id, keep_s):
        return True
    held = client.get(claim_key(request_id))
    # Gone between the two commands (expired): nobody else holds it now.
    return held is None or text(held) == journey_id
