"""Start tiers: where a request starts, in the five words ADR-006's table is read in.

==============  =======================================  ======================================
tier            first hop (ADR-006 router table)           who it is for
==============  =======================================  ======================================
local-small     ``ollama`` small model (llama3.2:3b)       complexity 1-2, simple queries
local-code      ``ollama`` 7B model (qwen2.5:7b...)        code review, complexity 3
cloud           ``gemini``                                 complexity 4-5, multi-service triage
tools           ``nemotron`` (tool chain)                  tools attached, operations asked for
critical        ``claude``                                 priority ``critical``
==============  =======================================  ======================================

A rule in ``routes.toml`` may name its tier (``tier = "cloud"``); without one the tier follows from
its provider (and, for Ollama, whether the model is the small default). :func:`tier_for` reads the
label of a corpus row the same way the router decides, so the corpus's tiers and ``decide()``'s
cannot drift apart.
"""

from __future__ import annotations

from aipool.routing.table import DEFAULT_ROUTES_FILE, RouteTable, Rule, load_table

#: The share of ``max_tokens`` a model may spend thinking, by the tier a request starts at (a
#: route table rule's ``thinking`` says otherwise). None for the local tiers: a request a small
#: local model would have answered that falls back to Gemini must not spend its output budget
#: thinking (Gemini 2.5 thinks unless told not to, and counts it inside ``max_tokens``); none for
#: tool calls, which are short (Nemotron's own tool calling runs with thinking off); half for the
#: cloud tiers, whose requests are the complex ones.
THINKING_SHARES = {
    "local-small": 0.0,
    "local-code": 0.0,
    "cloud": 0.5,
    "tools": 0.0,
    "critical": 0.5,
}
#: The small local model ADR-006 names for complexity 1-2; any other Ollama model is the 7B tier.
SMALL_LOCAL_MODEL = "llama3.2:3b"
_BY_PROVIDER = {"gemini": "cloud", "claude": "critical", "nemotron": "tools"}


def tier_of_rule(rule: Rule | None) -> str:
    """The tier a rule starts requests at; no rule matched: the general chain's Ollama default."""
    if rule is None:
        return "local-small"
    if rule.tier is not None:
        return rule.tier
    if rule.provider in _BY_PROVIDER:
        return _BY_PROVIDER[rule.provider]
    return "local-small" if rule.model in (None, SMALL_LOCAL_MODEL) else "local-code"


def choose_rule(
    table: RouteTable, *, intent: str, complexity: int, priority: str, has_tools: bool
) -> Rule | None:
    """The first rule of ``table`` that takes a request with these facts (tool requests only
    consider tool-capable rules), or None."""
    for rule in table.rules:
        if has_tools and not rule.tool_capable:
            continue
        if rule.matches(
            intent=intent, complexity=complexity, priority=priority, has_tools=has_tools
        ):
            return rule
    return None


def tier_for(
    intent: str,
    complexity: int,
    *,
    priority: str = "normal",
    has_tools: bool = False,
    table: RouteTable | None = None,
) -> str:
    """The tier a request with this intent and complexity should start at (the packaged route
    table unless ``table`` is given)."""
    table = table if table is not None else load_table(DEFAULT_ROUTES_FILE)
    return tier_of_rule(
        choose_rule(
            table, intent=intent, complexity=complexity, priority=priority, has_tools=has_tools
        )
    )
