"""Smart routing (ADR-006 §Phase 13.3): intent and complexity pick a request's first hop.

``decide(request) -> Route`` is the entry point; ``explain(text)`` routes a bare message and
``render_route`` prints a decision. Everything here is pure and local: no network, no state
beyond the route table file.
"""

from aipool.contract.route import Route
from aipool.routing.complexity import ComplexityScore, score
from aipool.routing.intent import Intent, IntentDecision, classify, classify_text
from aipool.routing.router import decide, explain
from aipool.routing.table import RouteTable, RouteTableError, Rule, load_table, parse_table

__all__ = [
    "ComplexityScore",
    "Intent",
    "IntentDecision",
    "Route",
    "RouteTable",
    "RouteTableError",
    "Rule",
    "classify",
    "classify_text",
    "decide",
    "explain",
    "load_table",
    "parse_table",
    "score",
]
