"""The four wire protocols the simulator speaks, one module each, behind :class:`WireProtocol`."""

from __future__ import annotations

from aipool.simulator.wire.anthropic import AnthropicWire
from aipool.simulator.wire.base import ErrorKind, Reply, WireProtocol
from aipool.simulator.wire.gemini import GeminiWire
from aipool.simulator.wire.ollama import OllamaWire
from aipool.simulator.wire.openai import OpenAIWire

#: One protocol instance per server kind.
WIRES: dict[str, WireProtocol] = {
    "ollama": OllamaWire(),
    "gemini": GeminiWire(),
    "anthropic": AnthropicWire(),
    "openai": OpenAIWire(),
}

__all__ = [
    "WIRES",
    "AnthropicWire",
    "ErrorKind",
    "GeminiWire",
    "OllamaWire",
    "OpenAIWire",
    "Reply",
    "WireProtocol",
]
