"""The router: a request in, a :class:`Route` (intent, complexity, chain, reason) out.

``decide`` is a pure function of the request and the route table: the same request always gets
the same route, so it does not matter whether the producer routes locally or the ``router`` queue
task does it. Nothing here touches the network.

A route travels as JSON inside Celery task kwargs and in the result (``Route.to_dict``)::

    {"intent": "CODE_REVIEW", "complexity": 3, "confidence": 0.83, "rule": "code_review",
     "chain": [{"provider": "ollama", "model": "qwen2.5:7b"},
               {"provider": "gemini", "model": "gemini-2.5-flash"}, ...,
               {"provider": "static", "model": "static"}],
     "reason": "intent CODE_REVIEW (...); complexity 3 (...); rule code_review → ollama:qwen2.5:7b"}

Hops are objects rather than ``"provider:model"`` strings because Ollama model ids contain colons
themselves; ``from_dict`` accepts both forms all the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aipool.chains import Hop, build_chain
from aipool.contract import Message, Request
from aipool.routing.complexity import score
from aipool.routing.intent import classify
from aipool.routing.table import RouteTable, load_table


@dataclass(frozen=True)
class Route:
    """Where a request goes: the hops in order, and why."""

    intent: str
    complexity: int
    chain: tuple[Hop, ...]
    reason: str
    confidence: float = 1.0
    rule: str = ""

    @property
    def first(self) -> Hop:
        """The hop routing chose; the rest of the chain is ADR order."""
        return self.chain[0]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for task kwargs and results."""
        return {
            "intent": self.intent,
            "complexity": self.complexity,
            "chain": [hop.to_dict() for hop in self.chain],
            "reason": self.reason,
            "confidence": self.confidence,
            "rule": self.rule,
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
        )


def _hop(item: Any) -> Hop:
    if isinstance(item, dict):
        return Hop.from_dict(item)
    # Provider names hold no colon, model ids may ("qwen2.5:7b"): split at the first one only.
    provider, _, model = str(item).partition(":")
    return Hop(provider, model or provider)


def _quote(reasons: tuple[str, ...], limit: int = 4) -> str:
    shown = ", ".join(reasons[:limit])
    return shown + (f", +{len(reasons) - limit} more" if len(reasons) > limit else "")


def decide(request: Request, table: RouteTable | None = None) -> Route:
    """Route ``request``: classify, score, take the first matching rule, build the ADR chain.

    A request that carries tools always ends on the tool chain (``… → refuse``) and only rules whose
    provider can call tools are considered for it. When no rule matches, the chain starts at the
    ADR default (``ollama`` or ``nemotron``).
    """
    table = table if table is not None else load_table()
    intent = classify(request)
    complexity = score(request)
    has_tools = bool(request.tools)
    chosen = None
    for rule in table.rules:
        if has_tools and not rule.tool_capable:
            continue
        if rule.matches(
            intent=intent.intent,
            complexity=complexity.score,
            priority=request.priority,
            has_tools=has_tools,
        ):
            chosen = rule
            break
    tools_chain = has_tools or (chosen is not None and chosen.chain == "tools")
    first = chosen.first_hop() if chosen is not None else None
    chain = build_chain(first, tools=tools_chain)
    rule_name = chosen.name if chosen is not None else "default"
    reason = (
        f"intent {intent.intent} ({_quote(intent.reasons)}); "
        f"complexity {complexity.score} ({_quote(complexity.reasons)}); "
        f"rule {rule_name} → {chain[0]}" + (" (tool chain)" if tools_chain else "")
    )
    return Route(
        intent=intent.intent,
        complexity=complexity.score,
        chain=chain,
        reason=reason,
        confidence=intent.confidence,
        rule=rule_name,
    )


def explain(text: str, table: RouteTable | None = None) -> Route:
    """Route a one-message request holding ``text``, as ``aipool route "<text>"`` does."""
    return decide(Request(messages=(Message(role="user", content=text),)), table)
