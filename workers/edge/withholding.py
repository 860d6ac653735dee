"""The prompt kept out of task events, Flower and logs, whoever produced the message.

A plain ``send_task`` puts ``saferepr(kwargs)`` (the prompt) into the ``kwargsrepr`` header, which
Celery copies into the task-received event and its log record. Messages the pool builds itself
carry a description of the hop instead (``tasks.generate.describe``) and say so with the
:data:`DESCRIBED` header; every other ``ai.generate`` message has its arguments withheld on receipt.
"""

from __future__ import annotations

from typing import Any

#: The task whose arguments are the request (``tasks.generate.TASK_NAME``, which imports the app).
GENERATE = "ai.generate"

#: What task events, Flower and logs show of a request's arguments when its producer did not say.
WITHHELD = "{'request': '<withheld>'}"

#: Header the pool sets on the ``ai.generate`` messages it builds, whose ``kwargsrepr`` names the
#: hop rather than the request. A producer that sets it chooses what its own messages show.
DESCRIBED = "aipool_described"


def described() -> dict[str, Any]:
    """The headers of a message whose ``kwargsrepr`` the pool wrote (``tasks.generate.describe``)."""
    return {DESCRIBED: True}


def withhold_prompt(message: Any) -> None:
    """Replace the argument reprs of an ``ai.generate`` message the pool did not describe."""
    headers = message.headers
    if headers.get("task") != GENERATE:
        return
    if not (headers.get(DESCRIBED) is True and isinstance(headers.get("kwargsrepr"), str)):
        headers["kwargsrepr"] = WITHHELD
    headers["argsrepr"] = "()"
