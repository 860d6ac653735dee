"""What every wire protocol provides: routing, auth, parsing, rendering and native error bodies.

The HTTP server does the rest (faults, counting, timing) the same way for every provider, so a
protocol module holds nothing but the provider's formats.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from aipool.simulator.answers import Answer
from aipool.simulator.conversation import Exchange

ErrorKind = Literal[
    "bad_request", "authentication", "not_found", "rate_limit", "server_error", "overloaded"
]

_DEFAULT_STATUS: dict[str, int] = {
    "bad_request": 400,
    "authentication": 401,
    "not_found": 404,
    "rate_limit": 429,
    "server_error": 500,
}


@dataclass(frozen=True)
class Reply:
    """An HTTP response to send: status, body bytes and extra headers."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str = "application/json"
    #: Send the body one byte every this many seconds (the ``trickle`` fault); 0: all at once.
    trickle_s: float = 0.0

    @classmethod
    def json(cls, status: int, data: Any, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
        """A JSON reply (compact, UTF-8)."""
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        return cls(status=status, body=body, headers=headers)


class WireProtocol(ABC):
    """One provider's HTTP formats.

    Headers are passed with lower-case names; ``query`` holds the URL's query parameters.
    """

    #: The server kind this protocol serves.
    kind: ClassVar[str]
    #: The status the provider answers with when overloaded.
    overloaded_status: ClassVar[int] = 503

    def base_url(self, root: str) -> str:
        """The base URL this provider's SDK takes, given the server root ``http://host:port``."""
        return root

    @abstractmethod
    def is_generation(self, method: str, path: str) -> bool:
        """Whether ``method path`` is this provider's inference endpoint."""

    def probe(self, method: str, path: str) -> Any | None:
        """The JSON answer of a cheap health endpoint at ``path``, or ``None`` if it is not one."""
        return None

    def authenticate(self, headers: Mapping[str, str], query: Mapping[str, str]) -> Reply | None:
        """Return an error reply if the request carries no credentials; ``None`` lets it in."""
        return None

    def credential(self, headers: Mapping[str, str], query: Mapping[str, str]) -> str:
        """The credential the request carried, wherever a client may put one (``""`` if none)."""
        for name in ("x-api-key", "x-goog-api-key"):
            if headers.get(name):
                return headers[name]
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            return authorization[len("bearer ") :].strip()
        return query.get("key", "")

    @abstractmethod
    def parse(self, path: str, body: Any) -> Exchange:
        """Parse an inference request body; raise ``BadRequest`` when the provider would refuse it."""

    @abstractmethod
    def render(self, exchange: Exchange, answer: Answer) -> Any:
        """The provider's JSON response carrying ``answer``."""

    @abstractmethod
    def error_body(self, kind: ErrorKind, status: int, message: str) -> Any:
        """The provider's native JSON error body."""

    def error(self, kind: ErrorKind, message: str, status: int | None = None) -> Reply:
        """A native error reply; the status defaults to what the provider sends for ``kind``."""
        if status is None:
            status = self.overloaded_status if kind == "overloaded" else _DEFAULT_STATUS[kind]
        return Reply.json(status, self.error_body(kind, status, message))

    def rate_limited(self, delay_s: float, *, daily: bool = False) -> Reply:
        """A 429 declaring a delay of ``delay_s`` the way this provider does (``Retry-After``
        unless the protocol says otherwise); ``daily``: the quota spent is the day's, where the
        provider's 429 says which."""
        reply = self.error("rate_limit", "Rate limit exceeded (simulated fault)")
        return Reply(reply.status, reply.body, (("retry-after", f"{delay_s:g}"),))

    def model_missing(self, model: str) -> Reply:
        """The provider's answer for a model it does not have, in its own words."""
        return self.error("not_found", f"model {model} not found (simulated fault)")

    def account_refused(self, *, spend_limit: bool = False) -> Reply:
        """The provider's answer when the pool's key or account is refused: a 401 unless the
        protocol documents an answer of its own (a disabled, unpaid or out-of-credit account);
        ``spend_limit``: the account's own spend limit is reached, where the provider says so
        apart."""
        return self.error("authentication", "unauthorized (simulated fault)")

    def tools_unsupported(self, model: str) -> Reply | None:
        """The provider's answer to tools ``model`` (or the server) cannot call, or ``None``
        where every model takes tools (the request is answered as usual)."""
        return None

    def prompt_blocked(self, exchange: Exchange, answer: Answer) -> Reply:
        """The provider's answer to a prompt it refuses before generating: a 400 unless the
        protocol has a blocked-prompt answer of its own."""
        return self.error("bad_request", "Prompt blocked by content policy (simulated fault)")

    def malformed(self, variant: str) -> Reply:
        """A 200 reply the SDK cannot use: broken JSON, or (``"schema"``) JSON of the wrong shape."""
        if variant == "schema":
            return Reply.json(200, {"unexpected": True, "simulator": "malformed response"})
        return Reply(status=200, body=b'{"simulator": "malformed response", "trunc')
