"""The producer contract (v1) as typed models, and the JSON Schema (draft 2020-12) made from them.

A producer outside Python validates what it sends against ``docs/contract.schema.json`` (the
kwargs of ``ai.generate``) and reads results by ``#/$defs/Result``; ``aipool schema`` prints the
same text. The workers keep the hand-written :func:`aipool.contract.request.parse_request`: it is faster
than validating through these models and returns the producer's error codes
(``unknown_role``, ``invalid_text``...). Both describe one contract, and a test keeps them
accepting and refusing the same requests.

A request's own keys are closed (``additionalProperties: false``): a misspelt field is refused
(``unknown_field``) rather than served as if absent. Messages, tools and tool calls stay open:
producers pass turns in their vendors' shapes, whose extra keys the pool ignores. A result is open
too: contract v1 may add fields, and a producer ignores those it does not know.

The schema is the canonical form: what it accepts, the workers accept. The workers are lenient in
a few places it is not (an ``intent`` in any letter case, a ``prompt`` beside an empty
``messages`` list). What JSON Schema cannot say is in the descriptions: ``metadata`` at most
16 KB of JSON and 32 levels deep, tool names used once, the prompt within
``AIPOOL_MAX_PROMPT_TOKENS`` (32,000 estimated tokens by default).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema, WithJsonSchema, models_json_schema

from aipool.contract.request import (
    DEFAULT_MAX_TOKENS,
    INT_RANGE,
    INTENTS,
    MAX_DEPTH,
    MAX_METADATA_SIZE,
    MAX_OUTPUT_TOKENS,
    MAX_TOOLS,
    MAX_USER_ID_LENGTH,
    PRIORITIES,
    SERVICE_NAME,
)
from aipool.contract.result import CONTRACT_VERSION
from aipool.contract.vocabulary import ERROR_MEANINGS, OUTCOME_MEANINGS, ErrorCode, Outcome

DRAFT = "https://json-schema.org/draft/2020-12/schema"
#: Text a provider can take: no lone surrogates, no C0 controls but tab, newline, carriage return.
SENDABLE = "^[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uD800-\\uDFFF]*$"

# The pattern is given to the schema only: these models describe the contract; they are not what
# the workers validate with (see the module docstring).
Text = Annotated[str, Field(json_schema_extra={"pattern": SENDABLE})]
NonEmptyText = Annotated[str, Field(min_length=1, json_schema_extra={"pattern": SENDABLE})]
#: Non-empty and not only whitespace.
PromptText = Annotated[
    str,
    Field(min_length=1, json_schema_extra={"allOf": [{"pattern": SENDABLE}, {"pattern": "\\S"}]}),
]
#: An integer a provider's JSON parser can hold, as the workers check it.
JsonInt = Annotated[int, Field(ge=INT_RANGE.start, le=INT_RANGE.stop - 1)]
#: An id a producer may give as a string or an integer.
Id = Text | JsonInt
JsonObject = dict[str, Any]
#: Plain JSON a producer sends (metadata, tool parameters, tool-call arguments): every key and
#: string in it is sendable text, as the workers check (the recursion is ``#/$defs/SendableJson``).
_SENDABLE_MEMBERS: JsonDict = {
    "propertyNames": {"pattern": SENDABLE},
    "additionalProperties": {"$ref": "#/$defs/SendableJson"},
}
SENDABLE_JSON: JsonDict = {
    "description": (
        "Plain JSON whose keys and strings are sendable text, and whose integers (numbers written "
        "without a fraction or exponent) fit in 64 bits, which JSON Schema cannot see."
    ),
    "anyOf": [
        {"type": "string", "pattern": SENDABLE},
        {"type": ["number", "boolean", "null"]},
        {"type": "array", "items": {"$ref": "#/$defs/SendableJson"}},
        {"type": "object", **_SENDABLE_MEMBERS},
    ],
}
SendableObject = Annotated[dict[str, Any], WithJsonSchema({"type": "object", **_SENDABLE_MEMBERS})]

# Inside messages and tools producers may send more (their vendors' shapes); the pool ignores it.
_OPEN = ConfigDict(extra="allow")
_NON_EMPTY_STRING: JsonDict = {"type": "string", "minLength": 1}
_NON_EMPTY_ARRAY: JsonDict = {"type": "array", "minItems": 1}


class ToolCallSent(BaseModel):
    """A tool call an assistant turn made; ``arguments`` is an object or its JSON text."""

    model_config = ConfigDict(extra="allow", title="ToolCallSent")

    name: Text
    arguments: SendableObject | Text = Field(default_factory=dict)
    id: Id | None = None


class SystemMessage(BaseModel):
    """Folded with ``system`` into the one system prompt every provider understands."""

    model_config = _OPEN

    role: Literal["system"]
    content: Text | None = None
    name: Text | None = None


class UserMessage(BaseModel):
    model_config = _OPEN

    role: Literal["user"]
    content: NonEmptyText
    name: Text | None = None


class AssistantMessage(BaseModel):
    """An earlier answer: text, tool calls, or both."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "anyOf": [
                {"required": ["content"], "properties": {"content": _NON_EMPTY_STRING}},
                {"required": ["tool_calls"], "properties": {"tool_calls": _NON_EMPTY_ARRAY}},
            ]
        },
    )

    role: Literal["assistant"]
    content: Text | None = None
    tool_calls: list[ToolCallSent] | None = None
    name: Text | None = None


class ToolMessage(BaseModel):
    """A tool's result: ``name`` is the tool, ``tool_call_id`` the call it answers (one of them)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "anyOf": [
                {"required": ["name"], "properties": {"name": _NON_EMPTY_STRING}},
                {
                    "required": ["tool_call_id"],
                    "properties": {
                        "tool_call_id": {"anyOf": [_NON_EMPTY_STRING, {"type": "integer"}]}
                    },
                },
            ]
        },
    )

    role: Literal["tool"]
    content: Text | None = None
    name: Text | None = None
    tool_call_id: Id | None = None


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]

_TOOL_NAME = "^[A-Za-z0-9_-]*[A-Za-z0-9][A-Za-z0-9_-]*$"


class ToolSchema(BaseModel):
    """A JSON Schema object describing a tool's arguments."""

    model_config = ConfigDict(
        extra="allow", title="ToolParameters", json_schema_extra=_SENDABLE_MEMBERS
    )

    type: Literal["object"] = "object"


class Tool(BaseModel):
    """A function the model may call. ``input_schema`` (Anthropic's name) may replace
    ``parameters``. Each name is used once per request."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={"anyOf": [{"required": ["parameters"]}, {"required": ["input_schema"]}]},
    )

    name: str = Field(min_length=1, pattern=_TOOL_NAME)
    description: Text | None = None
    # Either may be left out; neither may be null (the workers refuse a tool without a schema).
    parameters: ToolSchema | SkipJsonSchema[None] = None
    input_schema: ToolSchema | SkipJsonSchema[None] = None


class FunctionTool(BaseModel):
    """OpenAI's wrapper, accepted as a courtesy: ``{"type": "function", "function": {...}}``."""

    model_config = _OPEN

    type: Literal["function"] = "function"
    function: Tool


class Request(BaseModel):
    """One inference request: ``messages`` or ``prompt`` (not both), and options. No other key:
    a misspelt field is refused (``unknown_field``), and the producer's own data goes in
    ``metadata``."""

    model_config = ConfigDict(
        extra="forbid",
        title="Request",
        json_schema_extra={
            "anyOf": [
                {"required": ["messages"], "properties": {"messages": {"type": "array"}}},
                {"required": ["prompt"], "properties": {"prompt": {"type": "string"}}},
            ],
            "not": {
                "required": ["messages", "prompt"],
                "properties": {
                    "messages": {"type": "array", "minItems": 1},
                    "prompt": {"type": "string"},
                },
            },
        },
    )

    messages: (
        Annotated[
            list[Message],
            Field(
                min_length=1,
                json_schema_extra={
                    "contains": {"properties": {"role": {"not": {"const": "system"}}}}
                },
            ),
        ]
        | None
    ) = Field(None, description="The conversation; at least one turn that is not a system turn.")
    prompt: PromptText | None = Field(None, description="One user turn, instead of messages.")
    system: Text | None = Field(None, description="A system prompt.")
    tools: Annotated[list[Tool | FunctionTool], Field(max_length=MAX_TOOLS)] | None = Field(
        None, description="Tools the model may call; a request with tools takes the tool chain."
    )
    max_tokens: Annotated[int, Field(ge=1, le=MAX_OUTPUT_TOKENS)] | None = Field(
        None, description=f"Most tokens to generate (default {DEFAULT_MAX_TOKENS})."
    )
    temperature: Annotated[float, Field(ge=0, le=2)] | None = None
    intent: Literal[INTENTS] | None = Field(  # type: ignore[valid-type]
        None,
        description="Overrides the classifier; ALERT_TRIAGE requests take the urgent lanes.",
    )
    priority: Literal[PRIORITIES] | None = Field(  # type: ignore[valid-type]
        None,
        description=(
            "critical starts at Claude and takes the urgent lanes (router.urgent, "
            "<provider>.urgent) at every hop (default normal)."
        ),
    )
    deadline_s: Annotated[float, Field(ge=0.001, le=3600)] | None = Field(
        None,
        description=(
            "Latency budget in seconds, counted from when the pool first saw the request "
            "(time waiting in queues included); hops that would start after it are skipped, "
            "and when none can answer in time the result is status error, code deadline. "
            "A budget of 60 s or less takes the urgent lanes."
        ),
    )
    user_id: (
        Annotated[
            str,
            Field(max_length=MAX_USER_ID_LENGTH, json_schema_extra={"pattern": SENDABLE}),
        ]
        | JsonInt
        | None
    ) = Field(None, description="Recorded in the ledger.")
    service: Annotated[str, Field(pattern=f"^{SERVICE_NAME.pattern}$")] | None = Field(
        None,
        description=(
            "The producing service, as the route table declares it; an undeclared name is "
            "counted as 'other'. Its budget, quota shares and priority ceiling apply."
        ),
    )
    metadata: SendableObject | None = Field(
        None,
        description=(
            f"Plain JSON, at most {MAX_METADATA_SIZE} characters and {MAX_DEPTH} levels deep; "
            "not recorded in the ledger."
        ),
    )


class GenerateKwargs(BaseModel):
    """The kwargs of the task ``ai.generate``: the request, and nothing else."""

    model_config = ConfigDict(extra="forbid", title="GenerateKwargs")

    request: Request


class Usage(BaseModel):
    """Every billed token: the input includes prompt-cache writes and reads, the output thinking
    and reasoning tokens; the other counts say how many of them were of that kind."""

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    thinking_tokens: int = Field(
        default=0, ge=0, description="Of the output: thinking or reasoning tokens."
    )
    cache_write_tokens: int = Field(
        default=0, ge=0, description="Of the input: tokens written to the prompt cache."
    )
    cache_read_tokens: int = Field(
        default=0, ge=0, description="Of the input: tokens read from the prompt cache."
    )


class Hop(BaseModel):
    provider: str
    model: str


class Route(BaseModel):
    """Why the request went where it went."""

    intent: str
    complexity: int = Field(ge=1, le=5)
    chain: list[Hop]
    reason: str
    confidence: float
    rule: str
    tier: str = Field(
        default="",
        description="where the route starts: local-small, local-code, cloud, tools or critical",
    )
    source: str = Field(
        default="", description="who decided the intent: explicit, tools, model or rules"
    )
    service: str = Field(
        default="other",
        description="the service the request is counted as: declared in the route table, else other",
    )
    thinking: float | None = Field(
        default=None,
        description="the share of max_tokens a model on the route may spend thinking (0: none)",
    )
    refusal_ends: bool = Field(
        default=False,
        description="whether a model's refusal ends the chain instead of asking the next provider",
    )


def _meanings(vocabulary: Mapping[Any, str]) -> str:
    return "; ".join(f"{name}: {meaning}" for name, meaning in vocabulary.items())


class Attempt(BaseModel):
    """One hop of the request; ``outcome`` as aipool.contract.vocabulary means it."""

    provider: str
    model: str
    outcome: Outcome = Field(description=_meanings(OUTCOME_MEANINGS))
    error: str | None
    latency_ms: float = Field(ge=0)
    code: str | None = Field(
        default=None,
        description="of a failed call: the provider error's code (timeout, rate_limited, ...)",
    )


class ToolCall(BaseModel):
    """A tool call the model made; ``arguments`` is parsed JSON."""

    id: str
    name: str
    arguments: JsonObject


class ResultError(BaseModel):
    """Why the request could not be served (``status`` ``error``); ``code`` as
    aipool.contract.vocabulary means it."""

    code: ErrorCode = Field(description=_meanings(ERROR_MEANINGS))
    message: str


class Result(BaseModel):
    """What the producer's ``AsyncResult`` resolves to, always (never a Celery ``FAILURE``)."""

    model_config = ConfigDict(extra="allow", title="Result")

    v: Literal[CONTRACT_VERSION]  # type: ignore[valid-type]
    request_id: str
    status: Literal["ok", "fallback", "refused", "error"]
    content: str | None
    tool_calls: list[ToolCall]
    finish_reason: str | None
    provider: str | None
    model: str | None
    usage: Usage
    cost_usd: float = Field(ge=0)
    latency_ms: float = Field(ge=0, description="Since the pool received the request.")
    route: Route | None
    attempts: list[Attempt]
    error: ResultError | None
    cached: bool = Field(
        default=False,
        description="answered from the response cache: no provider called, cost_usd 0",
    )
    saved_usd: float = Field(
        default=0.0, ge=0, description="of a cached answer: what it cost when a provider gave it"
    )
    trace_id: str | None = Field(
        default=None,
        description="the request's OpenTelemetry trace (32 hex digits) when the pool traces",
    )


def contract_schema() -> dict[str, Any]:
    """The contract as one JSON Schema document: the root validates ``ai.generate``'s kwargs,
    ``#/$defs/Result`` a result."""
    _, top = models_json_schema(
        [(GenerateKwargs, "validation"), (Result, "validation")],
        ref_template="#/$defs/{model}",
    )
    definitions = {**top["$defs"], "SendableJson": SENDABLE_JSON}
    root = definitions.pop("GenerateKwargs")
    return {
        "$schema": DRAFT,
        "$id": "urn:aipool:contract:v1",
        "title": "aipool producer contract v1",
        "description": (
            "Task ai.generate, JSON only, kwargs {request: Request} (this document's root). "
            "The result is #/$defs/Result."
        ),
        **{k: v for k, v in root.items() if k not in ("title", "description")},
        "$defs": definitions,
    }


def schema_text() -> str:
    """The schema as ``docs/contract.schema.json`` holds it (and ``aipool schema`` prints it)."""
    return json.dumps(contract_schema(), indent=2, ensure_ascii=False) + "\n"
