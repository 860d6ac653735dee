"""Choosing which offered tool to call, and building its arguments from its JSON Schema.

Both are deterministic: the same prompt and tools give the same call, so tests can assert on it.
"""

from __future__ import annotations

import re
from typing import Any

from aipool.simulator.conversation import ToolSpec

_WORD = re.compile(r"[a-z0-9]+")
# Words too common to say anything about which tool a prompt wants.
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "do",
        "does",
        "for",
        "from",
        "get",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "please",
        "the",
        "this",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
    ]
)


def pick_tool(tools: tuple[ToolSpec, ...], prompt: str) -> ToolSpec:
    """Return the tool whose name and description share the most words with ``prompt``.

    Name words weigh double; ties go to the earlier tool, and with no overlap at all the first tool
    is chosen.
    """
    if not tools:
        raise ValueError("pick_tool needs at least one tool")
    wanted = _words(prompt)
    best, best_score = tools[0], 0
    for tool in tools:
        score = 2 * len(wanted & _words(tool.name.replace("_", " "))) + len(
            wanted & _words(tool.description)
        )
        if score > best_score:
            best, best_score = tool, score
    return best


def build_arguments(schema: dict[str, Any], prompt: str) -> dict[str, Any]:
    """Fill the object ``schema``'s required properties (all of them if none is marked required)."""
    value = _value_for(schema, "value", prompt, depth=0)
    return value if isinstance(value, dict) else {}


def _words(text: str) -> set[str]:
    return {word for word in _WORD.findall(text.lower()) if word not in _STOP_WORDS}


def _value_for(schema: Any, name: str, prompt: str, depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 8:
        return _string_for(name, prompt)
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _value_for(options[0], name, prompt, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "null")
    if kind is None and isinstance(schema.get("properties"), dict):
        kind = "object"
    kind = str(kind).lower() if kind is not None else "string"
    if kind == "object":
        return _object_for(schema, prompt, depth)
    if kind == "array":
        return [_value_for(schema.get("items", {}), name, prompt, depth + 1)]
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _string_for(name, prompt)


def _object_for(schema: dict[str, Any], prompt: str, depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return {}
    required = schema.get("required")
    names = (
        [name for name in required if isinstance(name, str)]
        if isinstance(required, list)
        else list(properties)
    )
    return {name: _value_for(properties.get(name, {}), name, prompt, depth + 1) for name in names}


_QUOTED = re.compile(r"[\"“]([^\"”]{1,60})[\"”]")
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w-]+(?:\s+[A-Z][\w-]+)*)")


def _string_for(name: str, prompt: str) -> str:
    """A string taken from the prompt: quoted text, else a proper noun, else the property name."""
    quoted = _QUOTED.search(prompt)
    if quoted:
        return quoted.group(1).strip()
    names = _CAPITALISED.findall(prompt.strip())
    if names:
        return str(names[-1])
    return name
