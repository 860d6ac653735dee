"""The producer contract (v1): what a request may hold and what a completion carries.

A request arrives as plain JSON (``{"request": {...}}`` in the ``ai.generate`` kwargs). ``parse_request``
turns it into a :class:`Request` or raises :class:`~aipool.errors.InvalidRequest` with a code the
producer can act on. Nothing here touches the network.

Unknown keys: a request's own keys are :data:`REQUEST_FIELDS` and nothing else. Each one changes
how the request is served or what it costs (``priority: critical`` starts at Claude), so a
misspelt one (``prioirty``, ``promt``) must not be served as if it were absent: it is refused
(``unknown_field``) naming the closest field. Nothing is lost by that: the pool adds a field
together with the code that reads it, so a producer never needs to send one the pool does not
know, and data of the producer's own goes in ``metadata``. Inside messages, tools and tool calls
unknown keys are ignored: producers pass conversation turns in their vendors' shapes (OpenAI's
``refusal``, ``annotations``), which carry nothing the pool acts on. The JSON Schema says the same
(``aipool.contract.schema``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from aipool.contract.completion import ToolCall
from aipool.contract.vocabulary import ErrorCode
from aipool.errors import InvalidRequest
from aipool.settings import settings
from aipool.settings.names import closest
from aipool.tokens import estimate_tokens

ROLES = ("system", "user", "assistant", "tool")
DEFAULT_MAX_TOKENS = 1024
MAX_OUTPUT_TOKENS = 32_768
MAX_TOOLS = 64
PRIORITIES = ("low", "normal", "high", "critical")
#: Every key a request may hold (see the module docstring on unknown keys).
REQUEST_FIELDS = (
    "messages",
    "prompt",
    "system",
    "tools",
    "max_tokens",
    "temperature",
    "intent",
    "priority",
    "deadline_s",
    "user_id",
    "service",
    "metadata",
)
#: Intents a producer may name explicitly (the classifier's vocabulary, aipool.routing.intent).
INTENTS = ("ALERT_TRIAGE", "QUERY", "CODE_REVIEW", "SUMMARY", "CHAT", "TOOL_CALL")
#: Deepest nesting of objects and arrays in metadata, tool parameters and tool-call arguments.
MAX_DEPTH = 32
#: Longest ``user_id``: the width of the ledger's ``user_id`` column, so it is stored whole.
MAX_USER_ID_LENGTH = 128
#: A service's name: what the route table declares it by (letters, digits, ``-``, ``_``, ``.``).
SERVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: Largest ``metadata``, in characters of its JSON form.
MAX_METADATA_SIZE = 16_384
#: Integers a provider's JSON parser can hold (64 bits, signed or unsigned).
INT_RANGE = range(-(2**63), 2**64)
#: C0 control characters other than tab, newline and carriage return, as UTF-8 bytes. In UTF-8
#: these bytes occur only as themselves, never inside a multi-byte character.
_CONTROL_BYTES = tuple(bytes([b]) for b in range(32) if chr(b) not in "\t\n\r")
#: Texts up to this many characters are checked with one ``isprintable`` scan first.
_SHORT_TEXT = 1024
#: A metadata key that can be shown as it is in a field path.
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", re.ASCII)


@dataclass(frozen=True)
class Message:
    """One turn of the conversation.

    ``tool`` messages carry a tool's result: ``name`` is the tool, ``tool_call_id`` the call it
    answers. ``assistant`` messages may carry the ``tool_calls`` the model made.
    """

    role: str
    content: str
    name: str = ""
    tool_call_id: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class Tool:
    """A function the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class Request:
    """A validated inference request, provider-neutral."""

    messages: tuple[Message, ...]
    system: str = ""
    tools: tuple[Tool, ...] = ()
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float | None = None
    intent: str | None = None
    priority: str = "normal"
    deadline_s: float | None = None
    user_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The producing service as the request names it (``None``: it names none). What it is
    #: counted as (a declared service, or ``other``) is the route table's to say.
    service: str | None = None

    def text(self) -> str:
        """All prompt text (system and messages), for estimates and classification."""
        parts = [self.system] if self.system else []
        parts.extend(m.content for m in self.messages)
        return "\n".join(parts)

    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""

    @cached_property
    def _text_token_estimate(self) -> int:
        # Computed once per request: the hop's estimate and the router's length points both read
        # all the prompt text for it. The request is frozen, so the estimate cannot go stale.
        return estimate_tokens(self.text())

    @cached_property
    def _input_token_estimate(self) -> int:
        # Computed once per request: every hop asks for it several times.
        tool_text = (
            json.dumps([asdict(t) for t in self.tools], ensure_ascii=False) if self.tools else ""
        )
        return self._text_token_estimate + estimate_tokens(tool_text) + 4 * len(self.messages)

    def estimated_text_tokens(self) -> int:
        """About how many tokens the prompt's text takes (system and messages, as :meth:`text`
        joins them; no tool declarations, no per-message framing)."""
        return self._text_token_estimate

    def estimated_input_tokens(self) -> int:
        """About how many tokens the prompt (system, messages, tool declarations) takes."""
        return self._input_token_estimate

    def estimated_total_tokens(self) -> int:
        """What a call could cost at most: the prompt plus the full output allowance."""
        return self._input_token_estimate + self.max_tokens


def _fail(code: ErrorCode, message: str) -> InvalidRequest:
    return InvalidRequest(code, message)


def _optional_text(value: Any, where: str, code: ErrorCode, shown: str | None = None) -> str:
    """An optional text field: absent or null is empty; anything but a string is refused
    (``code``, naming ``shown`` or ``where``), as is text no provider takes."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _fail(code, f"{shown or where} must be a string")
    _text(value, where)
    return value


def _text(value: str, where: str) -> str:
    """``value`` if every provider can encode it; else raise ``invalid_text`` naming ``where``.

    Lone surrogates cannot be encoded as UTF-8 at all; NUL and the other C0 controls (tab, newline
    and carriage return aside) are refused by providers' JSON parsers and by PostgreSQL. One C-level
    encode plus a byte search per control keeps a 100 KB prompt well under a millisecond.
    """
    # Printable text holds neither controls (category Cc) nor surrogates (Cs). For short text
    # (names, ids, one-line prompts) one such scan is cheaper than the per-control searches; a
    # long text is faster through them (a byte search beats a per-character lookup).
    if len(value) <= _SHORT_TEXT and value.isprintable():
        return value
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _fail(
            "invalid_text",
            f"{where} holds a lone surrogate (U+{ord(value[exc.start]):04X}) at character "
            f"{exc.start}; send valid Unicode",
        ) from None
    for control in _CONTROL_BYTES:
        if control in encoded:
            raise _fail(
                "invalid_text",
                f"{where} holds the control character U+{control[0]:04X}; only tab, newline and "
                "carriage return are allowed",
            )
    return value


def _key_path(where: str, key: str, index: int) -> str:
    # Keys are shown only when plain, so a path never repeats odd or unsendable producer text.
    return f"{where}.{key}" if _PLAIN_KEY.fullmatch(key) else f"{where}[key #{index}]"


def _json_value(value: Any, where: str, depth: int = 1) -> int:
    """Check that ``value`` is plain, sendable JSON; return about how many characters it takes.

    Objects need string keys; strings pass :func:`_text`; numbers are finite and integers fit in
    64 bits; nesting stops at :data:`MAX_DEPTH` (``depth`` is the level ``value`` sits at).
    """
    if isinstance(value, str):
        return len(_text(value, where)) + 2
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        if value not in INT_RANGE:
            raise _fail("invalid_number", f"{where} is an integer larger than 64 bits")
        return 20
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _fail("invalid_number", f"{where} must be a finite number")
        return 24
    if not isinstance(value, dict | list | tuple):
        raise _fail("invalid_value", f"{where} holds a {type(value).__name__}, which is not JSON")
    if depth > MAX_DEPTH:
        raise _fail("too_deep", f"{where} nests objects or arrays deeper than {MAX_DEPTH} levels")
    size = 2
    if isinstance(value, dict):
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise _fail("invalid_value", f"{where} has a key that is not a string")
            _text(key, f"{where}[key #{i}]")
            size += len(key) + 4 + _json_value(item, _key_path(where, key, i), depth + 1)
        return size
    for i, item in enumerate(value):
        size += 1 + _json_value(item, f"{where}[{i}]", depth + 1)
    return size


def _integer(value: Any) -> int | None:
    """``value`` as the integer JSON Schema sees in it (an int, or a float with nothing after the
    point, as a producer's float type writes ``5.0``), or None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _id_text(value: Any, where: str, code: ErrorCode) -> str:
    """An id given as a string or a 64-bit integer, as its text."""
    if isinstance(value, str):
        return _text(value, where)
    number = _integer(value)
    if number is None or number not in INT_RANGE:
        raise _fail(code, f"{where} must be a string")
    return str(number)


def _optional_id(value: Any, where: str) -> str:
    """An id a producer may leave out: a string or an integer, returned as a string."""
    if value is None or value == "":
        return ""
    return _id_text(value, where, "invalid_message")


def _parse_tool_calls(raw: Any, where: str) -> tuple[ToolCall, ...]:
    if raw in (None, []):
        return ()
    if not isinstance(raw, list):
        raise _fail("invalid_message", f"{where}.tool_calls must be a list")
    calls = []
    for i, item in enumerate(raw):
        at = f"{where}.tool_calls[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _fail("invalid_message", f"{at} needs a string 'name'")
        name = _text(item["name"], f"{at}.name")
        args = item.get("arguments", {})
        if isinstance(args, str):
            _text(args, f"{at}.arguments")
            try:
                args = json.loads(args or "{}")
            except RecursionError:
                raise _fail(
                    "too_deep", f"{at}.arguments nests deeper than {MAX_DEPTH} levels"
                ) from None
            except ValueError:
                raise _fail("invalid_message", f"{at}.arguments is not JSON") from None
        if not isinstance(args, dict):
            raise _fail("invalid_message", f"{at}.arguments must be an object")
        _json_value(args, f"{at}.arguments")
        calls.append(
            ToolCall(name=name, arguments=args, id=_optional_id(item.get("id"), f"{at}.id"))
        )
    return tuple(calls)


def _parse_messages(payload: dict[str, Any]) -> tuple[list[Message], str]:
    raw_messages = payload.get("messages")
    prompt = payload.get("prompt")
    system = _optional_text(payload.get("system"), "system", "invalid_system", "'system'")
    if raw_messages is None and prompt is None:
        raise _fail("missing_messages", "the request needs 'messages' or 'prompt'")
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise _fail("invalid_prompt", "'prompt' must be a non-empty string")
        _text(prompt, "prompt")
        if raw_messages:
            raise _fail("ambiguous_input", "send either 'messages' or 'prompt', not both")
        return [Message(role="user", content=prompt)], system
    if not isinstance(raw_messages, list) or not raw_messages:
        raise _fail("missing_messages", "'messages' must be a non-empty list")
    messages: list[Message] = []
    for i, raw in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(raw, dict):
            raise _fail("invalid_message", f"{where} must be an object with 'role' and 'content'")
        role = raw.get("role")
        if role not in ROLES:
            raise _fail("unknown_role", f"{where}.role must be one of {', '.join(ROLES)}")
        content = raw.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            raise _fail("invalid_message", f"{where}.content must be a string")
        _text(content, f"{where}.content")
        if role == "system":
            # System turns are folded into the one system prompt every provider understands.
            system = f"{system}\n{content}".strip() if system else content
            continue
        tool_calls = _parse_tool_calls(raw.get("tool_calls"), where) if role == "assistant" else ()
        name = _optional_text(raw.get("name"), f"{where}.name", "invalid_message")
        tool_call_id = _optional_id(raw.get("tool_call_id"), f"{where}.tool_call_id")
        if role == "tool" and not (name or tool_call_id):
            raise _fail(
                "invalid_message", f"{where}: a tool message needs 'name' or 'tool_call_id'"
            )
        if not content and not tool_calls and role != "tool":
            raise _fail("invalid_message", f"{where}.content is empty")
        messages.append(
            Message(
                role=role,
                content=content,
                name=name,
                tool_call_id=tool_call_id,
                tool_calls=tool_calls,
            )
        )
    if not messages:
        raise _fail("missing_messages", "'messages' holds only system turns")
    return messages, system


def _parse_tools(raw: Any) -> tuple[Tool, ...]:
    if raw in (None, []):
        return ()
    if not isinstance(raw, list):
        raise _fail("invalid_tools", "'tools' must be a list")
    if len(raw) > MAX_TOOLS:
        raise _fail("invalid_tools", f"at most {MAX_TOOLS} tools per request")
    tools = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"tools[{i}]"
        # Accept the OpenAI wrapper {"type": "function", "function": {...}} as a courtesy.
        if isinstance(item, dict) and isinstance(item.get("function"), dict):
            item = item["function"]
        if not isinstance(item, dict):
            raise _fail("invalid_tools", f"{where} must be an object")
        name = item.get("name")
        if isinstance(name, str):
            _text(name, f"{where}.name")
        if (
            not isinstance(name, str)
            or not name
            or not name.replace("_", "").replace("-", "").isalnum()
        ):
            raise _fail("invalid_tools", f"{where}.name must be letters, digits, '_' or '-'")
        if name in seen:
            raise _fail("invalid_tools", f"{where}.name {name!r} is used twice")
        seen.add(name)
        params = item.get("parameters", item.get("input_schema"))
        if not isinstance(params, dict):
            raise _fail(
                "tool_without_schema", f"{where} needs 'parameters' as a JSON Schema object"
            )
        if params.get("type", "object") != "object":
            raise _fail("tool_without_schema", f"{where}.parameters must be of type 'object'")
        _json_value(params, f"{where}.parameters")
        description = _optional_text(
            item.get("description"), f"{where}.description", "invalid_tools"
        )
        tools.append(Tool(name=name, description=description, parameters=params))
    return tuple(tools)


_NUMBER_CODES: dict[str, ErrorCode] = {
    "max_tokens": "invalid_max_tokens",
    "temperature": "invalid_temperature",
    "deadline_s": "invalid_deadline_s",
}


def _number(payload: dict[str, Any], key: str, lo: float, hi: float, integer: bool) -> Any:
    value = payload.get(key)
    code = _NUMBER_CODES[key]
    if value is None:
        return None
    if integer:
        value = _integer(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "an integer" if integer else "a number"
        raise _fail(code, f"'{key}' must be {kind}")
    if not lo <= value <= hi:
        raise _fail(code, f"'{key}' must be between {lo:g} and {hi:g}")
    return value


_REQUEST_FIELD_SET = frozenset(REQUEST_FIELDS)


def _refuse_unknown_fields(payload: dict[str, Any]) -> None:
    unknown = [key for key in payload if key not in _REQUEST_FIELD_SET]
    if not unknown:
        return
    key = unknown[0]
    if not isinstance(key, str) or not _PLAIN_KEY.fullmatch(key):
        # Odd producer text is not repeated back (see _key_path).
        named, guess = "a key that is not a request field", None
    else:
        named, guess = f"{key!r} is not a request field", closest(key, REQUEST_FIELDS)
    more = f" ({len(unknown) - 1} more unknown)" if len(unknown) > 1 else ""
    if guess:
        raise _fail("unknown_field", f"{named} (did you mean {guess!r}?){more}")
    raise _fail(
        "unknown_field",
        f"{named}{more}; the fields are {', '.join(REQUEST_FIELDS)}, and data of your own goes "
        "in 'metadata'",
    )


def parse_request(payload: Any) -> Request:
    """Validate a producer's request dict; raise :class:`InvalidRequest` on the first problem."""
    if not isinstance(payload, dict):
        raise _fail("invalid_request", "the request must be a JSON object")
    _refuse_unknown_fields(payload)
    messages, system = _parse_messages(payload)
    tools = _parse_tools(payload.get("tools"))
    max_tokens = _number(payload, "max_tokens", 1, MAX_OUTPUT_TOKENS, integer=True)
    temperature = _number(payload, "temperature", 0, 2, integer=False)
    deadline_s = _number(payload, "deadline_s", 0.001, 3600, integer=False)
    intent = payload.get("intent")
    if intent is not None:
        intent = _text(intent, "intent").strip().upper() if isinstance(intent, str) else intent
        if intent not in INTENTS:
            raise _fail("invalid_intent", f"'intent' must be one of {', '.join(INTENTS)}")
    priority = payload.get("priority")
    if priority is None:
        priority = "normal"
    if priority not in PRIORITIES:
        raise _fail("invalid_priority", f"'priority' must be one of {', '.join(PRIORITIES)}")
    user_id = payload.get("user_id")
    if user_id is not None:
        user_id = _id_text(user_id, "'user_id'", "invalid_user_id")
        if len(user_id) > MAX_USER_ID_LENGTH:
            raise _fail(
                "invalid_user_id", f"'user_id' is longer than {MAX_USER_ID_LENGTH} characters"
            )
    service = payload.get("service")
    if service is not None and (
        not isinstance(service, str) or not SERVICE_NAME.fullmatch(service)
    ):
        raise _fail(
            "invalid_service",
            "'service' must be a name of 1 to 64 letters, digits, '-', '_' or '.'",
        )
    metadata = payload.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise _fail("invalid_metadata", "'metadata' must be an object")
    if _json_value(metadata, "metadata") > MAX_METADATA_SIZE:
        raise _fail(
            "metadata_too_large",
            f"'metadata' is larger than {MAX_METADATA_SIZE} characters of JSON",
        )
    request = Request(
        messages=tuple(messages),
        system=system,
        tools=tools,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        temperature=float(temperature) if temperature is not None else None,
        intent=intent,
        priority=priority,
        deadline_s=float(deadline_s) if deadline_s is not None else None,
        user_id=user_id,
        metadata=metadata,
        service=service,
    )
    # Requests above this many estimated prompt tokens are refused before any provider sees them.
    max_prompt_tokens = settings().max_prompt_tokens
    if request.estimated_input_tokens() > max_prompt_tokens:
        raise _fail(
            "prompt_too_large",
            f"the prompt is about {request.estimated_input_tokens()} tokens; "
            f"the limit is {max_prompt_tokens}",
        )
    return request
