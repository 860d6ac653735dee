"""Fallback chains: the ordered hops a request may visit, and where they end.

ADR-006 gives two chains. General requests go ``ollama → gemini → claude → static``; tool-calling
requests go ``nemotron → gemini → claude → refuse`` (a refusal, never a made-up tool result). Routing
picks the first hop and its model; the chain continues in ADR order after it.
"""

from __future__ import annotations

from aipool.contract.route import Hop
from aipool.providers.catalog import CATALOG, REFUSE, STATIC, TERMINALS

#: The chains' providers, in the catalog's order (aipool.providers.catalog).
GENERAL_CHAIN = tuple(name for name, facts in CATALOG.items() if facts.general)
TOOL_CHAIN = tuple(name for name, facts in CATALOG.items() if facts.tools)
#: Whether a model's refusal ends each kind of chain at its terminal hop, by default (a route
#: table rule's ``on_refusal`` says otherwise): a tool request a model declined is refused, not
#: shopped around until some model agrees to act; a general request goes on to the next provider,
#: as a content-policy fallback does (docs/routing.md).
REFUSAL_ENDS = {"general": False, "tools": True}


def default_model(provider: str) -> str:
    """The model a provider uses when the route names none (``AIPOOL_MODEL_<PROVIDER>``)."""
    if provider in TERMINALS:
        return provider
    # Imported here: the settings name their variables after this module's providers.
    from aipool.settings import settings

    return settings().providers[provider].model


def build_chain(first: Hop | None, *, tools: bool) -> tuple[Hop, ...]:
    """The ADR chain for a request, starting at ``first`` when routing chose one.

    The hops after ``first`` follow ADR order from the position of ``first``'s provider; the
    providers that order passed over come last, before the terminal, because any model's answer
    beats the static apology (a critical request starting at claude still tries ollama and gemini).
    """
    order = TOOL_CHAIN if tools else GENERAL_CHAIN
    terminal = Hop(REFUSE, REFUSE) if tools else Hop(STATIC, STATIC)
    if first is None:
        return (*(Hop(p, default_model(p)) for p in order), terminal)
    if first.provider in order:
        at = order.index(first.provider)
        rest = order[at + 1 :] + order[:at]
    else:
        rest = order
    return (first, *(Hop(p, default_model(p)) for p in rest), terminal)
