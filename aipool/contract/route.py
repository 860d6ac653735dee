"""The route as a request carries it: the hops in order and why, contract data.

The router (:mod:`aipool.routing.router`) decides a :class:`Route`, the chains
(:mod:`aipool.chains`) build its hops, and the journey (:mod:`aipool.contract.journey`) carries
it from hop to hop and into the result; the data itself lives here, at the bottom, so that what a
producer sends and receives depends on nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aipool.providers.catalog import TERMINALS

#: What a request naming no declared service is counted as: one label, never a new one per name.
OTHER_SERVICE = "other"


@dataclass(frozen=True)
class Hop:
    """One stop on a chain: a provider and the model to ask there."""

    provider: str
    model: str

    @property
    def terminal(self) -> bool:
        return self.provider in TERMINALS

    def to_dict(self) -> dict[str, str]:
        return {"provider": self.provider, "model": self.model}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hop:
        return cls(provider=str(data["provider"]), model=str(data["model"]))

    def __str__(self) -> str:
        return self.provider if self.terminal else f"{self.provider}:{self.model}"


@dataclass(frozen=True)
class Route:
    """Where a request goes: the hops in order, and why."""

    intent: str
    complexity: int
    chain: tuple[Hop, ...]
    reason: str
    confidence: float = 1.0
    rule: str = ""
    #: Where the route starts, in ADR-006's words (:mod:`aipool.routing.tiers`).
    tier: str = ""
    #: Who decided the intent: ``explicit``, ``tools``, ``model`` or ``rules``.
    source: str = ""
    #: The service the request is counted as (declared in the route table, else ``other``).
    service: str = OTHER_SERVICE
    #: The share of ``max_tokens`` a model on this route may spend thinking, where it takes a
    #: thinking budget (Gemini 2.5, Claude): 0 for none (the rule's ``thinking``, else its
    #: tier's); ``None`` (a route not built by :func:`decide`): each model's own default.
    thinking: float | None = None
    #: Whether a model's refusal ends the chain at its terminal hop instead of asking the next
    #: provider (the rule's ``on_refusal``, else the chain's: a tool chain ends, ``aipool.chains``).
    refusal_ends: bool = False

    def thinking_budget(self, max_tokens: int) -> int | None:
        """The tokens of ``max_tokens`` a call on this route may think (0: none; ``None``: the
        model's own default)."""
        return None if self.thinking is None else int(self.thinking * max_tokens)

    @property
    def first(self) -> Hop:
        """The hop routing chose; the rest of the chain is ADR order."""
        return self.chain[0]

    def index(self, provider: str) -> int:
        """The position of ``provider``'s hop (a chain holds each provider once)."""
        position = self.index_or_none(provider)
        if position is None:
            raise ValueError(f"{provider} is not on the chain")
        return position

    def index_or_none(self, provider: str) -> int | None:
        """The position of ``provider``'s hop, or ``None`` when the chain does not reach it."""
        for position, hop in enumerate(self.chain):
            if hop.provider == provider:
                return position
        return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for task kwargs and results."""
        return {
            "intent": self.intent,
            "complexity": self.complexity,
            "chain": [hop.to_dict() for hop in self.chain],
            "reason": self.reason,
            "confidence": self.confidence,
            "rule": self.rule,
            "tier": self.tier,
            "source": self.source,
            "service": self.service,
            "thinking": self.thinking,
            "refusal_ends": self.refusal_ends,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Route:
        """Inverse of :meth:`to_dict`; chain hops may also be ``"provider:model"`` strings."""
        return cls(
            intent=str(data["intent"]),
            complexity=int(data["complexity"]),
            chain=tuple(_hop(item) for item in data["chain"]),
            reason=str(data.get("reason", "")),
            confidence=float(data.get("confidence", 1.0)),
            rule=str(data.get("rule", "")),
            tier=str(data.get("tier", "")),
            source=str(data.get("source", "")),
            service=str(data.get("service") or OTHER_SERVICE),
            thinking=None if data.get("thinking") is None else float(data["thinking"]),
            refusal_ends=bool(data.get("refusal_ends", False)),
        )


def _hop(item: Any) -> Hop:
    if isinstance(item, dict):
        return Hop.from_dict(item)
    # Provider names hold no colon, model ids may ("qwen2.5:7b"): split at the first one only.
    provider, _, model = str(item).partition(":")
    return Hop(provider, model or provider)
