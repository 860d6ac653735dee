"""A loopback stand-in for a provider that answers every POST with one recorded response.

Wire tests serve a provider's documented response (status, headers, body) from it and call it
through the adapter's real SDK, the way the hop runner does.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from aipool.contract.completion import Completion
from aipool.contract.request import Request, parse_request
from aipool.errors import ProviderError, UnusableAnswer
from aipool.providers import claude, gemini, nemotron, ollama
from aipool.providers.endpoint import ProviderEndpoint

#: A plain question, and the models the adapters are asked for.
HELLO = parse_request({"prompt": "Why is the api slow?"})
GEMINI = "gemini-2.5-flash"
CLAUDE = "claude-sonnet-5"
NEMOTRON = "nvidia/llama-3.3-nemotron-super-49b-v1"


class CannedProvider:
    """A loopback server answering every POST with ``status``, ``headers`` and ``body`` (JSON, or
    a page of text as it is when ``body`` is a ``str``: a proxy's or web server's 404 page);
    ``requests`` keeps the JSON bodies it was sent."""

    def __init__(
        self, body: Any, *, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        page = isinstance(body, str)
        payload = body.encode() if page else json.dumps(body).encode()
        extra = {"Content-Type": "text/html; charset=utf-8" if page else "application/json"}
        extra.update(headers or {})
        self.requests: list[Any] = []
        sent = self.requests
        #: The ``Date`` header it answers with (``None``: the time it answers, as HTTP servers do).
        self.date: str | None = None
        canned = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sent.append(json.loads(raw or b"{}"))
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                return None

            def date_time_string(self, timestamp: float | None = None) -> str:
                return canned.date or super().date_time_string(timestamp)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll: shutdown() waits for the loop's next look (0.5 s by default, per test).
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def serve(
    canned: list[CannedProvider],
    body: Any,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> CannedProvider:
    """Start a :class:`CannedProvider` for the test (closed by the ``canned`` fixture)."""
    server = CannedProvider(body, status=status, headers=headers)
    canned.append(server)
    return server


def adapter(provider: str, url: str) -> Any:
    """``provider``'s adapter, its real SDK pointed at ``url``."""
    if provider == "gemini":
        return gemini.GeminiProvider(ProviderEndpoint("gemini", url, timeout_s=5))
    if provider == "claude":
        return claude.ClaudeProvider(ProviderEndpoint("claude", url, timeout_s=5))
    if provider == "nemotron":
        return nemotron.NemotronProvider(ProviderEndpoint("nemotron", url + "/v1", timeout_s=5))
    return ollama.OllamaProvider(ProviderEndpoint("ollama", url, timeout_s=5))


def answer(
    canned: list[CannedProvider],
    provider: str,
    model: str,
    body: Any,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    request: Request = HELLO,
    thinking_budget: int | None = None,
) -> Completion:
    """What ``provider``'s adapter makes of ``body`` served with ``status`` and ``headers``."""
    impl = adapter(provider, serve(canned, body, status=status, headers=headers).url)
    try:
        completion: Completion = impl.complete(
            request, model, timeout_s=5, thinking_budget=thinking_budget
        )
        return completion
    finally:
        impl.close()


def raised(canned: list[CannedProvider], provider: str, model: str, body: Any, **kw: Any) -> Any:
    """The :class:`~aipool.errors.ProviderError` the adapter raises for ``body``."""
    with pytest.raises(ProviderError) as caught:
        answer(canned, provider, model, body, **kw)
    return caught.value


def billed(error: UnusableAnswer) -> tuple[int, int]:
    """The input and output tokens an unusable answer carries to be booked."""
    assert error.billed is not None
    return error.billed.input_tokens, error.billed.output_tokens
