"""The response cache's key: a keyed hash of what decides an answer, never the text itself.

What decides an answer is what a provider is sent and which one is asked: the messages (role,
text, tool calls and their ids), the system prompt, the sampling fields (``max_tokens``,
``temperature``, the route's thinking share), and the route: its rule and the model it starts at.
The route table's version and the service's cache scope go in too, so an edited table answers no
request with what the old one routed, and one service never names another's entries.

Text is compared as a person reads it: Unicode NFC and the whitespace around each message ignored
(``"What is a pod? "`` is ``"What is a pod?"``); anything else, one character, is another key.

The hash is HMAC-SHA256 keyed by ``AIPOOL_CACHE_SECRET``, not a bare SHA-256: the questions a pool
is asked are short and guessable ("what is a pod?"), and anyone who can read Redis could hash a
list of guesses and see which were asked. Without the key a name says nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import unicodedata
from typing import Any

from aipool.contract.request import Request
from aipool.contract.route import Route

#: The layout of what is hashed: a new layout is a new version, so no key means two things.
KEY_VERSION = 1


def _text(value: str) -> str:
    return unicodedata.normalize("NFC", value).strip()


def decides(request: Request, route: Route, table_version: str, scope: str) -> dict[str, Any]:
    """What decides the answer to ``request`` routed as ``route``, as one JSON-able value."""
    return {
        "v": KEY_VERSION,
        "table": table_version,
        "scope": scope,
        "rule": route.rule,
        "hop": [route.first.provider, route.first.model],
        "thinking": route.thinking,
        "system": _text(request.system),
        "messages": [
            [
                m.role,
                _text(m.content),
                m.name,
                m.tool_call_id,
                [[c.id, c.name, c.arguments] for c in m.tool_calls],
            ]
            for m in request.messages
        ],
        "tools": [[t.name, t.description, t.parameters] for t in request.tools],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
    }


def cache_key(secret: bytes, request: Request, route: Route, table_version: str, scope: str) -> str:
    """The entry's name: HMAC-SHA256 of :func:`decides`, keyed by ``secret``, in hex."""
    canonical = json.dumps(
        decides(request, route, table_version, scope),
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hmac.new(secret, canonical.encode("utf-8"), hashlib.sha256).hexdigest()
