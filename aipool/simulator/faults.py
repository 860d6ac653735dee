"""Faults a simulated provider can be switched into, validated from plain keyword options.

Kinds and their options (every kind also takes ``times``: the fault covers only the next ``times``
calls, then the provider is healthy again; without it the fault lasts until healed):

- ``down``: the port stops listening, so clients get *connection refused*; healing re-binds the
  same port. With ``times`` the port keeps listening instead and resets the next ``times``
  connections' requests unanswered (a refused connection never reaches us, so it cannot be counted).
- ``error_500``: HTTP 500 in the provider's own error format.
- ``bad_request``: HTTP 400 in the provider's own error format: the provider is healthy but refuses
  this request (it must not count against the provider's breaker).
- ``rate_limit``: HTTP 429 with a ``Retry-After`` header of ``retry_after`` seconds (default 1).
- ``overloaded``: the provider's "overloaded" answer: 529 for Anthropic, 503 for the others (what
  each real service sends); ``status`` overrides the code.
- ``hang``: hold the request until the provider is healed (or for ``seconds``), then answer. By
  default it outlasts every timeout of the pool (a provider's, a request's deadline, the task's
  time limit), so the pool sees a hang, never a slow answer.
- ``slow``: answer correctly after ``ms`` milliseconds (default 500).
- ``trickle``: answer correctly, but send the body one byte every ``ms`` milliseconds (default
  500): every socket read gets data in time, so only a bound on the whole call ends it.
- ``malformed``: HTTP 200 whose body is not valid JSON (``body="json"``, the default: a body cut
  short) or valid JSON outside the provider's schema (``body="schema"``).
- ``echo_key``: an error (``status``, default 401) whose message repeats the credential the request
  carried (``x-api-key``, ``Authorization``, ``x-goog-api-key`` or ``?key=``), as a misconfigured
  gateway does; tests plant a key and check it is never repeated anywhere.
- ``no_usage``: a correct answer that reports no token usage.
- ``bad_usage``: a correct answer reporting ``input_tokens`` and/or ``output_tokens`` as given
  (negative or absurd; without either, output is -1).
- ``bad_tool_args``: a tool-call answer whose arguments are not a JSON object (a string cut short);
  a request without tools gets its usual text answer.
- ``method_not_allowed``: HTTP 405 with nginx's "405 Not Allowed" page, whatever the request
  carries (key or none): what a server that does not serve the provider's API answers the call's
  POST, when the base URL points at a web site or a static file server instead of the provider.

What real providers send besides a clean answer, each in the provider's own documented shape
(the wire modules render them; a provider without such an answer sends the nearest one it has):

- ``safety``: the answer withheld for safety, its tokens billed: Gemini ``finishReason: SAFETY``
  with ``content: {}``; Anthropic ``stop_reason: refusal`` (its streaming classifiers' stop) with
  empty content; OpenAI-compatible ``finish_reason: content_filter`` with ``content: null``;
  Ollama, which has no such stop, an empty answer.
- ``refusal``: the model declines: Anthropic ``stop_reason: refusal``; OpenAI-compatible
  ``message.refusal``; Gemini, which has no refusal stop, ``PROHIBITED_CONTENT``; Ollama an empty
  answer.
- ``thinking_exhausted``: thinking used the whole output budget and nothing visible came back,
  every output token billed as thinking: Gemini ``MAX_TOKENS`` with content without parts and
  usage of only ``thoughtsTokenCount``; Anthropic ``max_tokens`` with only a thinking block;
  OpenAI-compatible ``length`` with empty content and ``reasoning_tokens``; Ollama ``length`` with
  ``message.thinking`` only.
- ``prompt_blocked``: the prompt refused before generation: Gemini no ``candidates`` and
  ``promptFeedback.blockReason: SAFETY`` (the prompt billed); OpenAI-compatible the content
  filter's 400 ``"code": "content_filter"`` with ``innererror.code:
  ResponsibleAIPolicyViolation`` and the categories it filtered (nothing billed); the others, which
  document no such answer, a 400 in their own error format.
- ``rate_limited``: HTTP 429 declaring a delay of ``retry_delay`` seconds (default 20) the way the
  provider does: Gemini in the body only (``error.details[]`` ``google.rpc.RetryInfo``
  ``retryDelay``, no header); Anthropic and Ollama a ``retry-after`` header; OpenAI-compatible
  ``x-ratelimit-reset-requests`` with ``x-ratelimit-remaining-requests: 0``. ``quota="day"``:
  Gemini's ``QuotaFailure`` names its daily quota spent
  (``GenerateRequestsPerDayPerProjectPerModel-FreeTier``) beside the same seconds-long
  ``retryDelay``; the others, whose 429 names no quota, answer as with ``"minute"`` (the default).
- ``model_missing``: HTTP 404 saying the requested model does not exist, in the provider's words.
- ``account_refused``: the pool's key or account refused, in the provider's documented shape: Gemini
  400 ``INVALID_ARGUMENT`` "API key not valid" with its ``google.rpc.ErrorInfo`` reason
  ``API_KEY_INVALID``; Anthropic 402 ``billing_error``; OpenAI-compatible 429
  ``insufficient_quota`` (credits run out); Ollama, which has no accounts, 401 ``unauthorized``.
  ``spend_limit=True``: the account's own spend limit reached: Anthropic's 400
  ``invalid_request_error`` "You have reached your specified API usage limits. You will regain
  access on <the next month's first day> at 00:00 UTC."; the others answer as without it.
- ``malformed_call``: the model's tool call comes out broken: Gemini ``finishReason:
  MALFORMED_FUNCTION_CALL`` with no content and a ``finishMessage`` quoting the call, only the
  prompt billed (as python-genai's users report it); OpenAI-compatible, whose servers pass the
  model's text on, arguments that are not JSON (as ``bad_tool_args``); Anthropic and Ollama, whose
  servers document no such answer, answer as usual. A request without tools gets its usual answer.
- ``unknown_tool``: the model calls a function the request did not offer (any function, when it
  offered none): Gemini ``finishReason: UNEXPECTED_TOOL_CALL`` with the undeclared call in the
  parts and its name in ``finishMessage``; the others, whose servers pass the model's call on,
  the call as a tool call.
- ``missing_argument``: the model's call leaves out an argument the function's schema requires (an
  empty ``arguments`` object, as vllm-project/vllm-ascend#14731 reports): every provider's server
  passes the call on as the model wrote it (none documents a check of required arguments). A
  request without tools, or whose tool requires nothing, gets its usual answer.
- ``unparsed_call``: the model's call comes back as text its server's tool-call parser did not
  read: OpenAI-compatible, Llama-Nemotron's ``<TOOLCALL>[{"name": ..., "arguments": ...}]
  </TOOLCALL>`` as ``content`` with ``finish_reason: stop`` and no ``tool_calls`` (a NIM with the
  wrong parser, NVIDIA-AI-Blueprints/retail-shopping-assistant#215); Ollama, nemotron-mini's
  ``<toolcall> {...} </toolcall>`` as ``content`` (ollama/ollama#6870); Gemini and Anthropic, whose
  servers parse calls themselves, answer as usual. A request without tools gets its usual answer.
- ``tools_unsupported``: a request with tools refused because the model or its server takes no
  tool calls: OpenAI-compatible, vLLM's (and a NIM's) 400 ``BadRequestError`` ``"auto" tool choice
  requires --enable-auto-tool-choice and --tool-call-parser to be set``; Ollama 400
  ``registry.ollama.ai/library/<model> does not support tools``; Gemini and Anthropic, whose every
  model takes tools, answer as usual. A request without tools gets its usual answer.
- ``cache_1h``: a correct answer whose prompt, all but its last message, was written to Anthropic's
  1-hour cache (``usage.cache_creation.ephemeral_1h_input_tokens``); the other providers, which
  have no 1-hour cache, answer as usual.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

FAULT_KINDS: tuple[str, ...] = (
    "down",
    "error_500",
    "bad_request",
    "rate_limit",
    "overloaded",
    "hang",
    "slow",
    "trickle",
    "malformed",
    "echo_key",
    "no_usage",
    "bad_usage",
    "bad_tool_args",
    "method_not_allowed",
    "safety",
    "refusal",
    "thinking_exhausted",
    "prompt_blocked",
    "rate_limited",
    "model_missing",
    "account_refused",
    "malformed_call",
    "unknown_tool",
    "missing_argument",
    "unparsed_call",
    "tools_unsupported",
    "cache_1h",
)
#: Kinds that shape a 200 answer the provider bills but the pool cannot use.
UNUSABLE_KINDS: tuple[str, ...] = ("safety", "refusal", "thinking_exhausted")
#: Kind names that mean "no fault"; setting one heals the provider.
HEALTHY_KINDS: tuple[str, ...] = ("healthy", "none", "ok", "heal")

_OPTIONS: dict[str, frozenset[str]] = {
    "down": frozenset(),
    "error_500": frozenset(),
    "bad_request": frozenset(),
    "rate_limit": frozenset({"retry_after", "seconds"}),
    "overloaded": frozenset({"status"}),
    "hang": frozenset({"seconds"}),
    "slow": frozenset({"ms"}),
    "trickle": frozenset({"ms"}),
    "malformed": frozenset({"body"}),
    "echo_key": frozenset({"status"}),
    "no_usage": frozenset(),
    "bad_usage": frozenset({"input_tokens", "output_tokens"}),
    "bad_tool_args": frozenset(),
    "method_not_allowed": frozenset(),
    "safety": frozenset(),
    "refusal": frozenset(),
    "thinking_exhausted": frozenset(),
    "prompt_blocked": frozenset(),
    "rate_limited": frozenset({"retry_delay", "quota"}),
    "model_missing": frozenset(),
    "account_refused": frozenset({"spend_limit"}),
    "malformed_call": frozenset(),
    "unknown_tool": frozenset(),
    "missing_argument": frozenset(),
    "unparsed_call": frozenset(),
    "tools_unsupported": frozenset(),
    "cache_1h": frozenset(),
}

#: The settings worth reporting for each kind (``seconds`` is only an alias for rate limits).
_SHOWN: dict[str, tuple[str, ...]] = {
    "down": (),
    "error_500": (),
    "bad_request": (),
    "rate_limit": ("retry_after",),
    "overloaded": ("status",),
    "hang": ("seconds",),
    "slow": ("ms",),
    "trickle": ("ms",),
    "malformed": ("body",),
    "echo_key": ("status",),
    "no_usage": (),
    "bad_usage": ("input_tokens", "output_tokens"),
    "bad_tool_args": (),
    "method_not_allowed": (),
    "safety": (),
    "refusal": (),
    "thinking_exhausted": (),
    "prompt_blocked": (),
    "rate_limited": ("retry_delay", "quota"),
    "model_missing": (),
    "account_refused": ("spend_limit",),
    "malformed_call": (),
    "unknown_tool": (),
    "missing_argument": (),
    "unparsed_call": (),
    "tools_unsupported": (),
    "cache_1h": (),
}


class InvalidFault(ValueError):
    """Raised for an unknown fault kind or an option the kind does not take."""


@dataclass(frozen=True)
class Fault:
    """One fault setting. ``times`` is ``None`` for "until healed"."""

    kind: str
    times: int | None = None
    retry_after: float = 1.0
    #: ``hang``: how long to hold a request; ``None``: until healed.
    seconds: float | None = None
    ms: float = 500.0
    status: int | None = None
    body: str = "json"
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: ``rate_limited``: the delay the 429 declares, in seconds.
    retry_delay: float = 20.0
    #: ``rate_limited``: the quota it says is spent, the minute's or (Gemini) the day's.
    quota: str = "minute"
    #: ``account_refused``: the account's spend limit reached (Anthropic says so in a 400).
    spend_limit: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Return the kind, ``times`` and the options that matter for this kind."""
        data = asdict(self)
        wanted = {"kind", "times", *_SHOWN[self.kind]}
        return {key: value for key, value in data.items() if key in wanted}


def make_fault(kind: str, **options: Any) -> Fault | None:
    """Validate ``kind`` and ``options`` and return the :class:`Fault`, or ``None`` for healthy."""
    kind = kind.strip().lower()
    if kind in HEALTHY_KINDS:
        return None
    if kind not in _OPTIONS:
        raise InvalidFault(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
    unknown = set(options) - _OPTIONS[kind] - {"times"}
    if unknown:
        raise InvalidFault(f"fault {kind!r} takes no option(s) {', '.join(sorted(unknown))}")
    times = options.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 1):
        raise InvalidFault(f"times must be a positive integer, got {times!r}")
    fields: dict[str, Any] = {"kind": kind, "times": times}
    if kind == "rate_limit":
        # ``seconds`` is accepted too: it is the natural word for a Retry-After value.
        fields["retry_after"] = _non_negative(
            "retry_after", options.get("retry_after", options.get("seconds", 1.0))
        )
    elif kind == "rate_limited":
        fields["retry_delay"] = _non_negative("retry_delay", options.get("retry_delay", 20.0))
        quota = options.get("quota", "minute")
        if quota not in ("minute", "day"):
            raise InvalidFault(f"rate_limited quota must be 'minute' or 'day', got {quota!r}")
        fields["quota"] = quota
    elif kind == "account_refused":
        spend_limit = options.get("spend_limit", False)
        if not isinstance(spend_limit, bool):
            raise InvalidFault(f"spend_limit must be true or false, got {spend_limit!r}")
        fields["spend_limit"] = spend_limit
    elif kind == "hang" and options.get("seconds") is not None:
        fields["seconds"] = _non_negative("seconds", options["seconds"])
    elif kind in ("slow", "trickle"):
        fields["ms"] = _non_negative("ms", options.get("ms", 500.0))
    elif kind == "overloaded" and options.get("status") is not None:
        fields["status"] = _error_status(options["status"])
    elif kind == "echo_key":
        fields["status"] = _error_status(options.get("status", 401))
    elif kind == "bad_usage":
        for name in ("input_tokens", "output_tokens"):
            value = options.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidFault(f"{name} must be an integer, got {value!r}")
            fields[name] = value
        if fields["input_tokens"] is None and fields["output_tokens"] is None:
            fields["output_tokens"] = -1
    elif kind == "malformed":
        body = options.get("body", "json")
        if body not in ("json", "schema"):
            raise InvalidFault(f"malformed body must be 'json' or 'schema', got {body!r}")
        fields["body"] = body
    return Fault(**fields)


def _error_status(status: Any) -> int:
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise InvalidFault(f"status must be an HTTP error code, got {status!r}")
    return status


def _non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidFault(f"{name} must be a non-negative number, got {value!r}")
    return float(value)
