"""The one interface every model provider implements, and helpers they share.

An adapter turns a provider-neutral :class:`~aipool.contract.request.Request` into its SDK's call, and the
SDK's answer back into a :class:`~aipool.contract.completion.Completion`. SDK exceptions are mapped into
:mod:`aipool.errors` in exactly one place per adapter (its ``map_error``), so the worker decides
"next provider or not" with one ``isinstance``.

What every adapter does the same way lives here: the timeout of one call (:func:`call_timeout`),
the request that cannot be sent (:func:`building_request`, :func:`request_error`), messages
scrubbed of credentials (:func:`scrubbed`) in the provider's own words (:func:`provider_words`),
usage checked before it is charged (:func:`checked_usage`, totals cross-checked against their
parts), an answer checked before it is returned (:func:`usable`: an empty, withheld or refused one
is an :class:`~aipool.errors.UnusableAnswer` carrying what it was billed), and a missing model told
from a rejected request (:func:`missing_model`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Protocol

from aipool.contract.completion import Completion, ToolCall
from aipool.contract.request import Message, Request
from aipool.errors import (
    ContentBlocked,
    EmptyAnswer,
    ModelRefused,
    PromptBlocked,
    ProviderAuthError,
    ProviderBadResponse,
    ProviderError,
    ProviderModelMissing,
    ProviderRejected,
    ProviderTimeout,
    ProviderToolsUnsupported,
    ProviderUnreachable,
    UnusableAnswer,
    status_error,
    task_time_limit,
)
from aipool.providers.retry_delay import declared_delay
from aipool.scrub import scrub
from aipool.tokens import estimate_tokens

log = logging.getLogger("aipool.providers")

#: Shortest timeout handed to an SDK: some read 0 as "no timeout at all".
MIN_CALL_TIMEOUT_S = 0.001
#: More prompt tokens than any model takes: a count above it is a broken answer, not a bill.
MAX_INPUT_TOKENS = 10_000_000
#: How far above ``max_tokens`` a reported output count may go before it is a broken answer
#: (thinking and tool-call framing can exceed the visible limit, never by this much).
OUTPUT_SLACK = 10


class Provider(Protocol):
    """A model provider reached through its own SDK."""

    name: str

    def complete(
        self,
        request: Request,
        model: str,
        *,
        timeout_s: float | None = None,
        thinking_budget: int | None = None,
    ) -> Completion:
        """Ask ``model`` to answer ``request``; raise a :class:`~aipool.errors.ProviderError`.

        ``thinking_budget``: the tokens of ``max_tokens`` the model may spend thinking, where it
        takes one (0: no thinking; ``None``: the model's own default)."""
        ...

    def close(self) -> None:
        """Release connections (worker shutdown, tests)."""
        ...


def with_tool_call_ids(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Give every tool call and tool result an id, pairing results with calls by name.

    A conversation may have started on a provider that names no call ids (Ollama) and continue on
    one that requires them (Claude's ``tool_use_id``, OpenAI's ``tool_call_id``), so ids are made up
    deterministically where missing: ``call_<n>`` in order of appearance.
    """
    counter = 0
    pending: list[ToolCall] = []
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            calls = []
            for call in message.tool_calls:
                if not call.id:
                    call = replace(call, id=f"call_{counter}")
                counter += 1
                calls.append(call)
                pending.append(call)
            out.append(replace(message, tool_calls=tuple(calls)))
        elif message.role == "tool":
            match = next(
                (c for c in pending if c.id == message.tool_call_id)
                if message.tool_call_id
                else (c for c in pending if c.name == message.name),
                None,
            )
            if match is not None:
                pending.remove(match)
                message = replace(
                    message,
                    tool_call_id=message.tool_call_id or match.id,
                    name=message.name or match.name,
                )
            elif not message.tool_call_id:
                message = replace(message, tool_call_id=f"call_{counter}")
                counter += 1
            out.append(message)
        else:
            out.append(message)
    return tuple(out)


class UnsendableRequest(Exception):
    """The request could not be turned into the provider's call; nothing was sent."""


@contextmanager
def building_request() -> Iterator[None]:
    """Mark the code that builds a call: whatever it raises means the request was not sent."""
    try:
        yield
    except Exception as exc:
        raise UnsendableRequest(type(exc).__name__) from exc


def call_timeout(timeout_s: float | None, provider_timeout_s: float) -> float:
    """Seconds one call may take: the provider's own timeout, cut to what is left of the deadline.

    A long deadline never lengthens a provider's timeout; a short one shortens it.
    """
    if timeout_s is None:
        return provider_timeout_s
    return max(MIN_CALL_TIMEOUT_S, min(timeout_s, provider_timeout_s))


def scrubbed(error: ProviderError) -> ProviderError:
    """``error`` with its message scrubbed: adapters build messages from what providers answer,
    and a provider may echo the request's credentials (a proxy, a misconfigured gateway)."""
    clean = scrub(error.message) or error.code
    error.message = clean
    error.args = (clean,)
    return error


def request_error(exc: Exception, provider: str) -> ProviderError | None:
    """The mapping every adapter shares for a request that could not be sent, or ``None``.

    A request the SDK cannot build or encode (text with a lone surrogate makes the JSON encoder
    raise ``UnicodeEncodeError`` before anything is sent) says nothing about the provider's health:
    :class:`~aipool.errors.ProviderRejected`, which does not count against it.
    """
    if isinstance(exc, UnsendableRequest):
        return ProviderRejected(f"{provider}: the request could not be built ({exc})")
    if isinstance(exc, UnicodeEncodeError):
        return ProviderRejected(f"{provider}: the request text cannot be encoded ({exc.reason})")
    return None


def map_api_error(exc: Exception, provider: str, sdk: Any) -> ProviderError:
    """Map an exception of the ``anthropic`` or ``openai`` SDK (``sdk`` is the module).

    Both SDKs share one exception hierarchy (``APITimeoutError``, ``APIConnectionError``,
    ``APIResponseValidationError``, ``APIStatusError`` with ``status_code`` and ``response``).
    """
    if (timed_out := task_time_limit(exc)) is not None:
        return timed_out
    if isinstance(exc, ProviderError):
        return scrubbed(exc)
    unsent = request_error(exc, provider)
    if unsent is not None:
        return unsent
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderTimeout(f"{provider}: no answer in time")
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderUnreachable(f"{provider}: cannot connect")
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderBadResponse(f"{provider}: answer does not match the API schema")
    if isinstance(exc, sdk.APIStatusError):
        words = provider_words(exc.body)
        message = f"{provider} HTTP {exc.status_code}: {words}".strip()
        if missing_model(exc.status_code, words):
            return scrubbed(ProviderModelMissing(message, status=exc.status_code))
        if tools_unsupported(exc.status_code, words):
            return scrubbed(ProviderToolsUnsupported(message, status=exc.status_code))
        filters = prompt_filters(exc.status_code, exc.body)
        if filters is not None:
            blocked = f"{provider} HTTP {exc.status_code}: the prompt was blocked ({filters})"
            return scrubbed(PromptBlocked(f"{blocked}: {words}", status=exc.status_code))
        if account_refused(exc.status_code, exc.body, words):
            return scrubbed(ProviderAuthError(message, status=exc.status_code))
        retry_after = declared_delay(exc.response.headers, exc.body)
        return scrubbed(status_error(exc.status_code, message, retry_after))
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError | IndexError):
        return ProviderBadResponse(f"{provider}: unreadable answer ({type(exc).__name__})")
    return ProviderUnreachable(f"{provider}: {type(exc).__name__}")


def checked_usage(
    provider: str,
    request: Request,
    input_tokens: int | None,
    output_tokens: int | None,
    text: str,
    calls: list[ToolCall],
    *,
    total: int | None = None,
) -> tuple[int, int]:
    """The usage to charge for an answer, or :class:`~aipool.errors.ProviderBadResponse`.

    A count the provider left out is estimated (the prompt from the request, the output from what
    came back, or from ``total`` when the provider reported one), so the answer is kept and still
    charged about right. A provider's ``total`` is cross-checked against the parts: when it is
    larger (hidden reasoning an OpenAI-compatible API bills without counting it in
    ``completion_tokens``) the difference is billed as output, the larger being what the provider
    charges; either way the difference is logged (counts only, never text). A negative or absurd
    count (more than :data:`MAX_INPUT_TOKENS` in, or :data:`OUTPUT_SLACK` times ``max_tokens``
    out) is a broken answer: refused, so it is never charged.
    """
    total = token_part(provider, "total_tokens", total) if total is not None else None
    missing = [
        name for name, n in (("input", input_tokens), ("output", output_tokens)) if n is None
    ]
    if input_tokens is None:
        input_tokens = request.estimated_input_tokens()
    if output_tokens is None:
        if total is not None and total >= input_tokens:
            output_tokens = total - input_tokens
        else:
            output_tokens = estimate_tokens(text) + sum(
                estimate_tokens(c.name + json.dumps(c.arguments, ensure_ascii=False)) for c in calls
            )
    if missing:
        log.warning(
            "%s answered without %s token usage; charged an estimate (%d in, %d out)",
            provider,
            " and ".join(missing),
            input_tokens,
            output_tokens,
        )
    if input_tokens < 0 or output_tokens < 0:
        raise ProviderBadResponse(f"{provider}: negative token usage")
    if total is not None and total != input_tokens + output_tokens:
        parts = input_tokens + output_tokens
        log.warning(
            "%s reported a usage total of %d against parts of %d (%d in, %d out): %s",
            provider,
            total,
            parts,
            input_tokens,
            output_tokens,
            f"{total - parts} more tokens charged as output"
            if total > parts
            else "the parts are charged",
        )
        output_tokens += max(0, total - parts)
    if input_tokens > MAX_INPUT_TOKENS:
        raise ProviderBadResponse(f"{provider}: absurd input usage ({input_tokens} tokens)")
    if output_tokens > OUTPUT_SLACK * request.max_tokens:
        raise ProviderBadResponse(
            f"{provider}: absurd output usage ({output_tokens} tokens for max_tokens "
            f"{request.max_tokens})"
        )
    return input_tokens, output_tokens


#: A reasoning model's thinking sent inline: one ``<think>`` block the text opens with, closed,
#: or left open where the output limit cut the thinking short (then nothing follows it).
_INLINE_THINKING = re.compile(r"\A\s*<think>.*?(?:</think>|\Z)\s*", re.DOTALL)


def without_thinking(text: str) -> str:
    """``text`` without the thinking a reasoning model wrote before its answer: DeepSeek-R1 and
    Qwen3 through Ollama, NVIDIA's Nemotron with ``detailed thinking on``, put it in the answer's
    text between ``<think>`` tags. The producer asked for the answer; the thinking is not it, and
    may quote the prompt. Only a block the text opens with is thinking."""
    if "<think>" not in text[:64]:
        return text
    return _INLINE_THINKING.sub("", text, count=1)


def usable(
    provider: str,
    completion: Completion,
    *,
    withheld: str | None = None,
    refused: bool = False,
    broken_call: str | None = None,
    stopped: str | None = None,
) -> Completion:
    """``completion`` when it holds an answer; otherwise the
    :class:`~aipool.errors.UnusableAnswer` that says why, carrying ``completion`` as what the call
    was billed (the runner books every token of it).

    ``withheld`` names the provider's reason when it withheld the answer (a safety or recitation
    stop, a content filter): :class:`~aipool.errors.ContentBlocked`, even over partial text.
    ``refused``: the model declined (:class:`~aipool.errors.ModelRefused`); its words are not
    kept, as no answer text is kept anywhere but in an answer. ``broken_call`` says why a tool
    call the model made cannot be run (cut off by the output limit, arguments that are not a
    JSON object or leave out a required one, a function the request did not offer, a call left
    in the text): the model's slip on this request, not
    the provider's health, so an :class:`~aipool.errors.UnusableAnswer` whatever else came with
    it. ``stopped`` names a stop that ends no answer (Gemini's ``OTHER``, ``MALFORMED_RESPONSE``):
    whatever text came before it is not known to be the answer, nor cut where a ``length`` stop
    would say, so it is an :class:`~aipool.errors.UnusableAnswer` too. An answer with no text
    and no tool call is an :class:`~aipool.errors.EmptyAnswer`, whatever its finish reason.
    """
    billed = replace(completion, text="", tool_calls=[])
    if withheld is not None:
        raise ContentBlocked(f"{provider}: the answer was withheld ({withheld})", billed=billed)
    if refused:
        raise ModelRefused(f"{provider}: the model refused to answer", billed=billed)
    if broken_call is not None:
        raise UnusableAnswer(
            f"{provider}: a tool call cannot be run ({broken_call})", billed=billed
        )
    if stopped is not None:
        raise UnusableAnswer(
            f"{provider}: the generation stopped before an answer ({stopped})", billed=billed
        )
    if not completion.text.strip() and not completion.tool_calls:
        thinking = completion.thinking_tokens
        why = (
            f"thinking used {thinking} of its {completion.output_tokens} output tokens"
            if thinking
            else f"{completion.output_tokens} output tokens"
        )
        raise EmptyAnswer(
            f"{provider}: the answer is empty (finish {completion.finish_reason}; {why})",
            billed=billed,
        )
    return completion


def provider_words(body: Any) -> str:
    """What a provider's error body says, in its own words: the error's type or code and its
    message (``{"error": {...}}`` of OpenAI, Anthropic and Google), or a problem document's title
    and detail (``{"status": 429, "title": ..., "detail": ...}``, RFC 9457, as NVIDIA answers);
    ``""`` for a body that says nothing. A page of markup (a proxy's or web server's 404 page,
    where an API was expected) says its title (:func:`page_words`). The caller scrubs it
    (:func:`scrubbed`)."""
    if isinstance(body, str):
        return page_words(body)[:300]
    if not isinstance(body, Mapping):
        return ""
    error = body.get("error", body)
    if isinstance(error, str):
        return page_words(error)[:300]
    if not isinstance(error, Mapping):
        return ""
    said: list[str] = []
    for key in ("type", "code", "status", "title", "message", "detail", "reason"):
        value = error.get(key)
        words = page_words(value) if isinstance(value, str) else ""
        if words and words not in said:
            said.append(words)
    return ": ".join(said)[:300]


_MARKUP = re.compile(r"^\s*<(!doctype|html|head|body)\b", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def page_words(text: str) -> str:
    """``text`` stripped, or, for an HTML page, its title (``"an HTML page"`` without one): the
    rest of a page is markup and styles, and the URL it may name is no model's name."""
    if not _MARKUP.match(text):
        return text.strip()
    title = _TITLE.search(text)
    words = " ".join(title.group(1).split()) if title else ""
    return f"an HTML page: {words}" if words else "an HTML page"


#: How providers say a model is not there: Ollama ("model 'x' not found, try pulling it first"),
#: Google ("models/x is not found for API version v1beta"), Anthropic ("not_found_error: model:
#: x"), OpenAI-compatible APIs ("model_not_found", "The model `x` does not exist").
_MISSING_MODEL = ("not found", "not_found", "does not exist", "no such model")
#: NVIDIA's hosted API names the cloud function that serves a model, never the model, when it
#: does not serve it (retired from its catalog, or not open to the account): "Function
#: '<uuid>': Not found for account '<id>'" in an RFC 9457 problem document.
_FUNCTION_NOT_SERVED = "not found for account"


#: A URL or an absolute path in an answer's words: a proxy or gateway echoing the path it does not
#: serve, which at Gemini names the model (``/v1beta/models/<model>:generateContent``).
_ECHOED_PATH = re.compile(r"[a-z][a-z0-9+.-]*://\S*|(?<![\w/])/[^\s\"'<>]+")


def missing_model(status: int, words: str) -> bool:
    """Whether a ``status`` answer saying ``words`` means the model asked for is not there: a 404
    that names a model (or, at NVIDIA, the function serving it), in its words rather than in a
    path it echoes. The model comes from the route table, so that is the pool's fault."""
    if status != 404:
        return False
    said = _ECHOED_PATH.sub(" ", words.lower())
    if "model" in said and any(w in said for w in _MISSING_MODEL):
        return True
    return "function" in said and _FUNCTION_NOT_SERVED in said


#: How a server says the model, or the server itself, takes no tool calls: vLLM and NVIDIA's NIMs
#: started without a tool-call parser (``"auto" tool choice requires --enable-auto-tool-choice and
#: --tool-call-parser to be set``: a request with tools and no ``tool_choice`` is "auto"), and
#: Ollama for a model without tool support (``registry.ollama.ai/library/<model> does not support
#: tools``).
_NO_TOOLS_WORDS = ("tool choice requires --enable-auto-tool-choice", "does not support tools")


def tools_unsupported(status: int, words: str) -> bool:
    """Whether a ``status`` answer saying ``words`` refuses tool calls for the model or server:
    every request with tools fails the same way, the pool's configuration."""
    said = words.lower()
    return status == 400 and any(phrase in said for phrase in _NO_TOOLS_WORDS)


#: How providers say, in a 400-class answer, that the pool's account is refused rather than the
#: request: Anthropic's prepaid credits run out ("Your credit balance is too low to access the
#: Anthropic API"), its organization's spend limit reached (a 400 ``invalid_request_error``, "You
#: have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00
#: UTC.": the month's end, or a person raising the limit) and its disabled organization
#: (``error.details.error_code``, the SDK's ``OrganizationOnHoldError``); OpenAI's 429
#: ``insufficient_quota`` ("You exceeded your current quota, please check your plan and billing
#: details": credits run out, not a rate limit, so no wait ends it).
_ACCOUNT_WORDS = (
    "credit balance is too low",
    "reached your specified api usage limits",
    "insufficient_quota",
)
_ACCOUNT_CODES = frozenset({"organization_on_hold"})


def account_refused(status: int, body: Any, words: str) -> bool:
    """Whether a 400-class ``status`` answer (``body``, saying ``words``) refuses the pool's
    account, not this request: every request fails the same way until a person acts, so it
    counts against the provider (:class:`~aipool.errors.ProviderAuthError`), as a refused key
    does."""
    if not 400 <= status < 500:
        return False
    said = words.lower()
    if any(phrase in said for phrase in _ACCOUNT_WORDS):
        return True
    error = body.get("error") if isinstance(body, Mapping) else None
    details = error.get("details") if isinstance(error, Mapping) else None
    return isinstance(details, Mapping) and details.get("error_code") in _ACCOUNT_CODES


#: How an OpenAI-compatible API says its content filter refused the prompt: a 400 whose error
#: ``code`` is ``content_filter``, ``innererror.code`` ``ResponsibleAIPolicyViolation`` and
#: ``innererror.content_filter_result`` the categories it filtered (Azure OpenAI's content
#: filtering guide; OpenAI's own filter withholds an answer instead, ``finish_reason:
#: content_filter``, which :func:`usable` reads).
_FILTER_CODES = frozenset({"content_filter", "ResponsibleAIPolicyViolation"})


def prompt_filters(status: int, body: Any) -> str | None:
    """What refused the prompt when a ``status`` answer (``body``) is a content filter's
    refusal of it: the categories it filtered (``"self_harm"``), or its code when it names none;
    ``None`` when the answer is not one. The prompt is the request's, so it never counts against
    the provider (:class:`~aipool.errors.PromptBlocked`)."""
    # The openai SDK hands over the body's "error" object itself; anthropic's the whole body.
    error = body.get("error", body) if isinstance(body, Mapping) and status == 400 else None
    if not isinstance(error, Mapping):
        return None
    inner = error.get("innererror")
    inner = inner if isinstance(inner, Mapping) else {}
    code = next((c for c in (error.get("code"), inner.get("code")) if c in _FILTER_CODES), None)
    if code is None:
        return None
    results = inner.get("content_filter_result")
    filtered = [
        str(name)
        for name, result in (results.items() if isinstance(results, Mapping) else ())
        if isinstance(result, Mapping) and result.get("filtered") is True
    ]
    return ", ".join(filtered) or str(code)


def token_part(provider: str, name: str, value: Any) -> int:
    """A breakdown count of a provider's usage (thinking, cached, tool-use tokens): 0 when left
    out; a negative or non-integer count is a broken answer (:class:`ProviderBadResponse`)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ProviderBadResponse(f"{provider}: bad {name} in its usage ({value!r})")
    return value


def cut_call(finish: str, calls: list[ToolCall], max_tokens: int) -> str | None:
    """Why the tool calls of an answer that stopped for ``finish`` cannot be run: a length stop
    (Anthropic's ``max_tokens``, OpenAI's ``length``, both read as ``length``) cuts the last call
    short, though what came of its arguments may still parse; ``None`` when nothing was cut."""
    if finish != "length" or not calls:
        return None
    return f"cut off by the output limit of {max_tokens} tokens"


#: A tool call written into the answer's text: Llama-Nemotron's ``<TOOLCALL>[...]``, Nemotron 3's
#: and Qwen's ``<tool_call><function=...>``, nemotron-mini's ``<toolcall>``, a bare
#: ``<function=...>``. An OpenAI-compatible server whose tool-call parser does not read the
#: model's form passes it on as text with ``finish_reason: stop`` and no ``tool_calls``
#: (NVIDIA-AI-Blueprints/retail-shopping-assistant#215, a NIM; ollama/ollama#6870).
_CALL_AS_TEXT = re.compile(r"\A\s*<(?:tool_?call|function=)", re.IGNORECASE)


def call_as_text(text: str, request: Request) -> str | None:
    """Why an answer to a request that offered tools cannot be used when its text opens with a
    tool call the server did not parse: the producer would get the call's markup as its answer,
    and no call to run; ``None`` otherwise (a request without tools, or any other text)."""
    if not request.tools or not _CALL_AS_TEXT.match(text):
        return None
    return "the model wrote its call as text the server did not parse"


def unrunnable_call(calls: list[ToolCall], request: Request) -> str | None:
    """Why a tool call of an answer cannot be run: it names a function ``request`` did not offer
    (any function, when it offered none), or leaves out an argument the function's schema
    requires; ``None`` when every call can be run.

    Models make both slips. Gemini's server catches the first itself (``UNEXPECTED_TOOL_CALL``:
    "the generated function is not in the function declaration"); an OpenAI-compatible server,
    Ollama or Anthropic passes the model's call on, and OpenAI's API reference says to "validate
    the arguments in your code before calling your function". The producer has no such function,
    or its function fails without the argument: the model's slip on this request."""
    offered = {tool.name: tool for tool in request.tools}
    for call in calls:
        tool = offered.get(call.name)
        if tool is None:
            # Not named: the name is the model's own words (it may echo the prompt), and no
            # answer text is kept anywhere but in an answer.
            return "it calls a function the request did not offer"
        required = tool.parameters.get("required")
        missing = [
            name
            for name in (required if isinstance(required, list) else ())
            if isinstance(name, str) and name not in call.arguments
        ]
        if missing:
            return f"its call of {call.name!r} leaves out the required {missing[0][:80]!r}"
    return None


def read_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as the model wrote them (:func:`parse_arguments`), or ``{}`` and why
    they cannot be read: OpenAI-compatible APIs pass the model's text on unchecked, and "the
    model does not always generate valid JSON" (OpenAI's API reference), so unreadable arguments
    are the model's slip on this request, not a broken answer of the provider."""
    try:
        return parse_arguments(raw), None
    except ValueError as exc:  # json.JSONDecodeError included
        return {}, f"its arguments are not a JSON object: {type(exc).__name__}"


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments arrive as a dict (Ollama, Gemini, Claude) or a JSON string (OpenAI)."""
    if isinstance(raw, dict):
        return raw
    if raw in (None, ""):
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("tool arguments are not a JSON object")
    return value
