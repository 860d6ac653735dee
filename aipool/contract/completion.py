"""What a provider answered, normalised: the contract's own data, below every layer that calls a
provider or books what it billed (:mod:`aipool.errors` carries a :class:`Completion` without text
as what a failed call billed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """A model's request to run a tool; ``arguments`` is already-parsed JSON."""

    name: str
    arguments: dict[str, Any]
    id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class Completion:
    """What a provider answered, normalised.

    ``input_tokens`` and ``output_tokens`` are every token the provider bills, as the quota counts
    them: the input includes prompt-cache writes and reads, the output includes thinking and
    reasoning tokens. The other counts say how many of those were of a kind billed apart or worth
    showing: ``cache_write_tokens`` and ``cache_read_tokens`` of the input (priced at their own
    rates, :func:`aipool.prices.table.completion_cost`), ``cache_write_1h_tokens`` of those
    writes kept an hour (Anthropic's, at their own rate), ``thinking_tokens`` of the output.
    """

    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str = "stop"
    latency_ms: float = 0.0
    thinking_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_1h_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "finish_reason": self.finish_reason,
            "latency_ms": self.latency_ms,
            "thinking_tokens": self.thinking_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_1h_tokens": self.cache_write_1h_tokens,
        }
