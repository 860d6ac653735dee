"""``route.reason`` names rules and signals, never words of the prompt (#21).

The reason is stored with the result, the ledger row and Flower's task view. Prompts are built
around a canary token and from the vocabulary the rules match on, so that signals fire; any
four-character run of the prompt that shows up in the reason must be part of the reasons' own
fixed vocabulary (rule names, signal labels, intent and tier names), never something the prompt
brought in.
"""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from aipool.contract.request import Message, Request, Tool
from aipool.routing.complexity import _STEP_MARKERS
from aipool.routing.intent import SIGNALS, Intent
from aipool.routing.router import decide
from aipool.routing.table import load_table
from aipool.routing.tier_names import TIERS

_FIXED_PHRASES = (
    "intent", "complexity", "rule", "model unsure", "model", "keyword rules", "keyword signals",
    "no keyword signal", "CHAT", "tokens", "pasted block(s)", "lines", "pasted payload or log lines",
    "correlate", "services/components", "analysis ask", "design comparison with a recommendation",
    "write-up for an audience over a period", "write-up for an audience", "several asks",
    "concerns to weigh", "multi-step ask",
    "user turns", "tool(s)", "capped at", "short single ask", "(tool chain)", "request carries",
    "explicit intent", "from the producer", "TOOL_CALL dropped: asks why/how/whether, not to act",
    "scored", "about not do", "default", "points", "without a word of an act",
)  # fmt: skip


def _vocabulary() -> list[str]:
    """Everything a reason is built from that is not a number, longest first."""
    table = load_table()
    parts = [*_FIXED_PHRASES, *(i.value for i in Intent), *TIERS]
    parts += [label for _, _, _, label, _ in SIGNALS]
    parts += [name for name, _ in _STEP_MARKERS]
    parts += [rule.name for rule in table.rules]
    route = decide(Request(messages=(Message(role="user", content="hi"),)))
    parts += [str(hop) for hop in route.chain]
    for rule in table.rules:
        parts.append(str(rule.first_hop()))
    return sorted(set(parts), key=len, reverse=True)


VOCABULARY = _vocabulary()
# Words the rules react to, in both languages, so that the reasons have something to say.
TRIGGERS = (
    "restart", "please", "why", "root cause", "correlate", "summarize", "review", "alert",
    "CrashLoopBackOff", "5xx", "幫我", "重啟", "為什麼", "根因", "告警", "摘要", "```diff\n+ a\n- b\n```",
    "payment-api", "ledger-db", "Redis", "then", "先", "再", "?", "？", "what is", "hello", "thanks",
    "post-mortem", "compare", "trade-offs", "recommend", "\n09:01 x\n09:02 y\n09:03 z\n09:04 w",
)  # fmt: skip
CANARY_LETTERS = "bcdfghjkmnpqrstvwxz"
FREE_TEXT = st.text(
    alphabet=st.sampled_from(
        string.ascii_letters + string.digits + " -_.,:;!?'\n" + "的是了王小明病歷刪除資料"
    ),
    max_size=60,
)


def _numberish(window: str) -> bool:
    return all(not c.isalpha() for c in window)


@st.composite
def prompts(draw: st.DrawFn) -> tuple[str, str]:
    canary = "Zq" + draw(st.text(alphabet=CANARY_LETTERS, min_size=6, max_size=10)) + "A123456789"
    pieces = draw(st.lists(st.one_of(st.sampled_from(TRIGGERS), FREE_TEXT), max_size=8))
    at = draw(st.integers(min_value=0, max_value=len(pieces)))
    pieces.insert(at, canary)
    return " ".join(pieces), canary


@settings(max_examples=300, deadline=None)
@given(prompts(), st.booleans(), st.sampled_from(["normal", "critical"]))
def test_no_prompt_text_in_any_reason(
    prompt: tuple[str, str], with_tools: bool, priority: str
) -> None:
    text, canary = prompt
    tools = (Tool(name="restart_deployment", description="d", parameters={"type": "object"}),)
    # Given a request around a canary token, with or without tools, at either priority
    request = Request(
        messages=(Message(role="user", content=text),),
        tools=tools if with_tools else (),
        priority=priority,
    )
    # When routed
    reason = decide(request).reason
    # Then the canary (and the national-id-shaped string in it) is nowhere in the reason
    assert canary not in reason and "A123456789" not in reason
    # And with the reasons' own words taken out, no four characters of the prompt are left
    residue = reason
    for phrase in VOCABULARY:
        residue = residue.replace(phrase, "\x00")
    for i in range(len(text) - 3):
        window = text[i : i + 4]
        assert _numberish(window) or window not in residue, (window, reason)
