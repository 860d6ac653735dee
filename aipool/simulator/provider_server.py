"""One simulated provider on its own port: the HTTP handling every wire protocol shares.

A request goes through the same steps for every provider: the fault in force (if any), then
credentials, then parsing, then the deterministic answer rendered in the provider's format.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import aipool.simulator.listener as listeners
from aipool.simulator.answers import TOKENS_PER_MESSAGE, Answer, ToolCallAnswer, compose
from aipool.simulator.conversation import BadRequest, Exchange
from aipool.simulator.faults import UNUSABLE_KINDS, Fault
from aipool.simulator.prompt_cache import PromptCache
from aipool.simulator.state import ProviderState
from aipool.simulator.wire import ErrorKind, Reply, WireProtocol
from aipool.tokens import estimate_tokens

#: Largest request body read; bigger ones are refused (413) before anything is parsed.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: nginx's own page for a method a location does not take (a POST to static files): the
#: ``method_not_allowed`` fault, a base URL pointing at a web server instead of the provider.
NGINX_405_PAGE = (
    b"<html>\r\n<head><title>405 Not Allowed</title></head>\r\n<body>\r\n"
    b"<center><h1>405 Not Allowed</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


class ProviderServer:
    """A provider's listening socket, its serving thread and what the handler needs.

    ``port`` 0 picks a free port on :meth:`start`; after that the port is fixed, so a provider
    that goes ``down`` comes back on the same address.
    """

    def __init__(self, wire: WireProtocol, state: ProviderState, host: str, port: int) -> None:
        self.wire = wire
        self.state = state
        self.prompt_cache = PromptCache()
        self.host = host
        self._port = port
        self._lock = threading.Lock()
        self._listener: listeners.Listener | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    @property
    def port(self) -> int:
        """The bound port (the requested one before :meth:`start`)."""
        return self._port

    @property
    def root_url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.host}:{self._port}"

    @property
    def base_url(self) -> str:
        """The base URL this provider's SDK takes."""
        return self.wire.base_url(self.root_url)

    @property
    def is_up(self) -> bool:
        """Whether the port is listening."""
        with self._lock:
            return self._listener is not None

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` has been called."""
        return self._stopping

    def start(self) -> None:
        """Bind and start serving (no-op if already up)."""
        with self._lock:
            if self._listener is not None:
                return
            self._stopping = False
            listener = listeners.bind(self.host, self._port, _Handler, self)
            self._port = listener.server_address[1]
            self._listener = listener
            self._thread = listeners.serve_in_thread(listener, f"simulator-{self.wire.kind}")

    def go_down(self) -> None:
        """Close the port and drop live connections: new calls are refused until :meth:`start`."""
        with self._lock:
            listener, thread = self._listener, self._thread
            self._listener, self._thread = None, None
        if listener is not None:
            listeners.close(listener, thread)

    def stop(self) -> None:
        """Stop for good: close the port and let go of requests held by ``hang``."""
        self._stopping = True
        self.state.let_go()
        self.go_down()


class _Handler(BaseHTTPRequestHandler):
    """Routes a request to the provider's wire protocol, applying the fault in force."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle on, a keep-alive client waits for
    # the delayed ACK (~40 ms) before the body arrives.
    disable_nagle_algorithm = True
    server_version = "aipool-simulator/1"
    server: listeners.Listener

    def do_GET(self) -> None:
        self._serve("GET")

    def do_HEAD(self) -> None:
        self._serve("HEAD")

    def do_POST(self) -> None:
        self._serve("POST")

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests and the demo read the admin state instead of access logs."""

    def _serve(self, method: str) -> None:
        provider: ProviderServer = self.server.owner
        url = urlsplit(self.path)
        raw = self._read_body()
        if raw is None:
            return
        if provider.state.take_drop():
            # A counted ``down``: answer nothing and close, as a dying server does.
            self.close_connection = True
            return
        wire = provider.wire
        if wire.is_generation(method, url.path):
            body = _decode(raw)
            fault = provider.state.admit(body)
            reply = self._generate(provider, fault, url.path, dict(parse_qsl(url.query)), body)
        else:
            answer = wire.probe(method, url.path)
            if answer is None:
                reply = wire.error("not_found", f"{method} {url.path} not found")
            else:
                provider.state.admit_probe()
                reply = (
                    Reply(200, answer.encode(), content_type="text/plain; charset=utf-8")
                    if isinstance(answer, str)
                    else Reply.json(200, answer)
                )
        if reply is None:
            self.close_connection = True
            return
        self._send(reply, head_only=method == "HEAD")

    def _generate(
        self,
        provider: ProviderServer,
        fault: Fault | None,
        path: str,
        query: dict[str, str],
        body: Any,
    ) -> Reply | None:
        wire = provider.wire
        headers = {name.lower(): value for name, value in self.headers.items()}
        if fault is not None:
            faulted = _apply(provider, fault, wire.credential(headers, query))
            if faulted is not _PROCEED:
                return faulted if isinstance(faulted, Reply) else None
        refused = wire.authenticate(headers, query)
        if refused is not None:
            return refused
        if isinstance(body, str):
            return wire.error("bad_request", "request body is not valid JSON")
        if not _encodable(body):
            # JSON may escape a lone surrogate (\ud800); every provider refuses such text.
            return wire.error("bad_request", "request holds an unpaired surrogate")
        try:
            exchange = wire.parse(path, body)
        except BadRequest as error:
            return wire.error("bad_request", str(error))
        if fault is not None and fault.kind == "model_missing":
            return wire.model_missing(exchange.model)
        if fault is not None and fault.kind == "tools_unsupported" and exchange.tools:
            refused_tools = wire.tools_unsupported(exchange.model)
            if refused_tools is not None:
                return refused_tools
        if fault is not None and fault.kind == "account_refused":
            return wire.account_refused(spend_limit=fault.spend_limit)
        answer = provider.prompt_cache.apply(wire.kind, exchange, compose(wire.kind, exchange))
        if fault is not None and fault.kind == "prompt_blocked":
            return wire.prompt_blocked(exchange, answer)
        if fault is not None:
            answer = _shape(answer, fault, exchange)
        reply = Reply.json(200, wire.render(exchange, answer))
        if fault is not None and fault.kind == "trickle":
            reply = replace(reply, trickle_s=fault.ms / 1000)
        return reply

    def _read_body(self) -> bytes | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            self._send(Reply.json(413, {"error": "request body too large or unreadable"}))
            return None
        return self.rfile.read(length) if length else b""

    def _send(self, reply: Reply, head_only: bool = False) -> None:
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            if head_only:
                return
            if not reply.trickle_s:
                self.wfile.write(reply.body)
                return
            self.wfile.flush()
            provider: ProviderServer = self.server.owner
            for i in range(len(reply.body)):
                if provider.stopping:
                    break
                self.wfile.write(reply.body[i : i + 1])
                self.wfile.flush()
                time.sleep(reply.trickle_s)
        except OSError:
            # The client gave up (timeout) or the provider went down meanwhile: nobody to tell.
            self.close_connection = True


_PROCEED = object()


def _apply(provider: ProviderServer, fault: Fault, credential: str) -> Reply | object | None:
    """The fault's effect: a reply, ``None`` for "close without answering", or ``_PROCEED``.

    ``credential`` is what the request carried as its key, for ``echo_key``.
    """
    wire = provider.wire
    if fault.kind == "echo_key":
        status = fault.status or 401
        return wire.error(
            _error_kind(status), f"invalid credential {credential or '(none sent)'}", status
        )
    if fault.kind == "error_500":
        return wire.error("server_error", "Internal server error (simulated fault)")
    if fault.kind == "bad_request":
        return wire.error("bad_request", "Invalid request (simulated fault)")
    if fault.kind == "rate_limit":
        reply = wire.error("rate_limit", "Rate limit exceeded (simulated fault)")
        retry_after = f"{fault.retry_after:g}"
        return Reply(reply.status, reply.body, (("Retry-After", retry_after),))
    if fault.kind == "rate_limited":
        return wire.rate_limited(fault.retry_delay, daily=fault.quota == "day")
    if fault.kind == "overloaded":
        return wire.error("overloaded", "Overloaded (simulated fault)", status=fault.status)
    if fault.kind == "malformed":
        return wire.malformed(fault.body)
    if fault.kind == "method_not_allowed":
        # Not the provider's answer: the web server's, before any key or body is looked at.
        return Reply(405, NGINX_405_PAGE, content_type="text/html")
    if fault.kind == "slow":
        time.sleep(fault.ms / 1000)
        return _PROCEED
    if fault.kind == "hang":
        provider.state.hold(fault.seconds)
        return None if provider.stopping or not provider.is_up else _PROCEED
    # ``down`` without ``times`` never reaches a handler; a counted one is dropped before admit.
    return _PROCEED


def _error_kind(status: int) -> ErrorKind:
    if status in (401, 403):
        return "authentication"
    if status == 429:
        return "rate_limit"
    if status < 500:
        return "bad_request"
    return "server_error"


def _shape(answer: Answer, fault: Fault, exchange: Exchange) -> Answer:
    """The answer as a fault that reaches it changes it (usage, tool-call arguments, what the
    provider withholds)."""
    if fault.kind in UNUSABLE_KINDS:
        if fault.kind != "thinking_exhausted":
            return replace(answer, withheld=fault.kind)  # billed as generated, then withheld
        # Thinking took every output token: nothing visible, all of it billed as thinking.
        budget = exchange.max_tokens or (answer.output_tokens + answer.thinking_tokens)
        return replace(
            answer,
            text="",
            tool_calls=(),
            output_tokens=0,
            thinking_tokens=budget,
            truncated=True,
            withheld=fault.kind,
        )
    if fault.kind == "cache_1h":
        # Everything but the last message written to the 1-hour cache on this call.
        prefix = sum(estimate_tokens(text) for text in exchange.texts[:-1])
        written = min(
            answer.input_tokens - 1, prefix + TOKENS_PER_MESSAGE * (exchange.message_count - 1)
        )
        written = max(0, min(written, answer.input_tokens - answer.cache_read_tokens - 1))
        return replace(answer, cache_write_tokens=written, cache_write_1h_tokens=written)
    if fault.kind == "no_usage":
        return replace(answer, usage_reported=False)
    if fault.kind == "bad_usage":
        return replace(
            answer,
            input_tokens=answer.input_tokens if fault.input_tokens is None else fault.input_tokens,
            output_tokens=(
                answer.output_tokens if fault.output_tokens is None else fault.output_tokens
            ),
            # The counts given are the whole usage: no thinking or cache counts beside them.
            thinking_tokens=0,
            cache_write_tokens=0,
            cache_read_tokens=0,
        )
    if fault.kind in ("malformed_call", "unparsed_call") and answer.tool_calls:
        return replace(answer, call_fault=fault.kind)
    if fault.kind == "unknown_tool":
        # The model's call names a function the request did not declare, or, offered none,
        # calls one anyway.
        calls = answer.tool_calls or (
            ToolCallAnswer(name="", arguments={}, call_id=_undeclared_id(exchange)),
        )
        declared = {tool.name for tool in exchange.tools}
        name = UNDECLARED_TOOL
        while name in declared:
            name += "_2"
        renamed = tuple(replace(call, name=name) for call in calls)
        return replace(answer, text="", tool_calls=renamed, call_fault=fault.kind)
    if fault.kind == "missing_argument":
        schemas = {tool.name: tool.schema for tool in exchange.tools}
        calls = tuple(
            replace(call, arguments=_without_required(call.arguments, schemas.get(call.name)))
            for call in answer.tool_calls
        )
        return replace(answer, tool_calls=calls)
    if fault.kind == "bad_tool_args":
        # The arguments' JSON cut in half: never an object, whatever the client does with it.
        calls = tuple(
            replace(call, raw_arguments=_cut_in_half(json.dumps(call.arguments)))
            for call in answer.tool_calls
        )
        return replace(answer, tool_calls=calls)
    return answer


#: The function the ``unknown_tool`` fault's model calls (with a suffix if the request declared
#: one of that name).
UNDECLARED_TOOL = "run_shell_command"


def _undeclared_id(exchange: Exchange) -> str:
    return hashlib.sha256(exchange.last_user_text.encode("utf-8")).hexdigest()[:24]


def _without_required(arguments: dict[str, Any], schema: Any) -> dict[str, Any]:
    required = schema.get("required") if isinstance(schema, dict) else None
    left_out = set(required) if isinstance(required, list) else set()
    return {name: value for name, value in arguments.items() if name not in left_out}


def _cut_in_half(text: str) -> str:
    return text[: max(1, len(text) // 2)]


def _encodable(body: Any) -> bool:
    try:
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _decode(raw: bytes) -> Any:
    """The request body as JSON, or as text when it is not JSON (kept for the request log)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text
