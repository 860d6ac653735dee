"""Complexity scoring: how much model a request needs, 1 (trivial) to 5 (hard), with reasons.

The score is a sum of points for what the request visibly holds, starting at 1 and clamped to 1..5:

==========================  =========================================================
length (estimated tokens)   +1 from ``LENGTH_STEPS[0]``, +1 more at each further step
pasted block                +1 for fenced blocks of ``BLOCK_LINES`` lines or more, +1 more
                            from ``LONG_BLOCK_LINES`` lines (a one-line block is just text)
entities                    +1 from ``ENTITY_STEPS[0]`` distinct services/pods/nodes/alerts,
                            +2 from ``ENTITY_STEPS[1]``
multi-step ask              +1 for one sequencing marker (first/then, 1. 2., 先…再, 然後, 並且),
                            +2 for three or more
conversation                +1 from ``HISTORY_TURNS`` user turns
tools                       +1 when the request carries tools
analysis ask                +1 for root cause / correlate / timeline (根因, 關聯, 因果)
==========================  =========================================================

Token counts use :func:`aipool.tokens.estimate_tokens` over the whole text, so CJK text is weighed
per character; every other signal reads a long text's first and last few kilobytes
(:func:`aipool.routing.text.bounded`), so scoring a 100 KB paste costs what a few kilobytes do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aipool.contract import Request
from aipool.routing.text import bounded, compile_folded, fold, split_text
from aipool.tokens import estimate_tokens

MIN_SCORE = 1
MAX_SCORE = 5
#: Estimated-token thresholds; each one passed adds a point.
LENGTH_STEPS = (10, 120, 400, 1500)
BLOCK_LINES = 4
LONG_BLOCK_LINES = 25
#: Distinct entities for +1 and +2.
ENTITY_STEPS = (3, 6)
HISTORY_TURNS = 3


@dataclass(frozen=True)
class ComplexityScore:
    """A 1-5 score and the contributions that make it up."""

    score: int
    reasons: tuple[str, ...]


# Service-like kebab-case names: a service suffix or a digit segment (pods, nodes, replicas).
# Plain hyphenated English ("on-call", "one-paragraph", "cross-region") is not an entity.
_KEBAB = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
_SERVICE_SUFFIX = re.compile(
    r"-(?:api|service|svc|gateway|worker|web|db|cache|server|indexer|controller|proxy|exporter|"
    r"frontend|backend|nginx|app|check|events|engine|queue|store|manager|agent)$|-\d|-[a-z0-9]*\d[a-z0-9]*$"
)
_ALERT_NAME = re.compile(
    r"\b(?:Kube|Node|Etcd|CoreDNS|Postgres|Kafka|Redis|High|Target|CertManager|"
    r"Prometheus|Container|SLO)[A-Z][A-Za-z]+\b"
)


def _folded(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A case-insensitive ``pattern``, compiled to match :func:`~aipool.routing.text.fold`-ed
    text: about twice as fast as ``re.IGNORECASE`` on long texts."""
    return compile_folded(pattern, flags)


# "three services", "3 個告警": a count the user states outright.
_STATED_COUNT = _folded(
    r"\b(\d+|two|three|four|five|six|several|multiple)\s+(?:services|alerts|pods|regions|nodes|clusters)\b|"
    r"(\d+|兩|二|三|四|五|六|多)\s*個?\s*(?:服務|告警|警報|pod|node|region|叢集)"
)
_WORD_NUMBERS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "several": 3, "multiple": 3,
    "兩": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "多": 3,
}  # fmt: skip
# Matched against folded text (see _folded).
_STEP_MARKERS = (
    ("first … then", _folded(r"\bfirst\b.{0,300}?\b(?:then|and)\b", re.DOTALL)),
    ("then", _folded(r"\b(?:then|after that|afterwards|and finally|finally)\b")),
    ("numbered steps", re.compile(r"(?ms)^\s*1[.)]\s.*^\s*2[.)]\s")),
    ("one at a time", _folded(r"one at a time|step by step|逐一|一步一步")),
    ("先…再/然後", re.compile(r"先.{0,80}?(?:再|然後|接著)", re.DOTALL)),
    ("然後/接著/最後", re.compile(r"然後|接著|最後|之後再")),
    ("並且/並…", re.compile(r"並且|並(?:說明|判斷|列出|給出|找出|提供|確認)")),
)
_ANALYSIS = _folded(
    r"root\s*cause|\bRCA\b|correlat|根因|根本原因|關聯|因果|timeline|時間線|"
    r"one incident or two|trade-?offs?|recommend"
)


def _entities(text: str) -> set[str]:
    found = {m for m in _KEBAB.findall(text) if _SERVICE_SUFFIX.search(m)}
    found.update(_ALERT_NAME.findall(text))
    return found


def _stated_count(text: str) -> int:
    best = 0
    for m in _STATED_COUNT.finditer(text):
        raw = (m.group(1) or m.group(2) or "").lower()
        best = max(best, int(raw) if raw.isdigit() else _WORD_NUMBERS.get(raw, 0))
    return best


def score(request: Request) -> ComplexityScore:
    """Score ``request`` from 1 to 5; every point it earns is named in ``reasons``."""
    points = MIN_SCORE
    reasons: list[str] = []
    text = request.text()

    tokens = estimate_tokens(text)
    steps = sum(1 for step in LENGTH_STEPS if tokens >= step)
    if steps:
        points += steps
        reasons.append(f"~{tokens} tokens (+{steps})")

    # Everything but the length reads a long text's head and tail only (text.bounded): a pasted
    # block's lines, entities and asks all show there, and a long text earns its length points.
    text = bounded(text)
    split = split_text(text)
    lines = split.code_lines
    if split.blocks and lines >= BLOCK_LINES:
        extra = 2 if lines >= LONG_BLOCK_LINES else 1
        points += extra
        reasons.append(f"{len(split.blocks)} pasted block(s), {lines} lines (+{extra})")

    entities = _entities(text)
    count = max(len(entities), _stated_count(fold(split.prose)))
    if count >= ENTITY_STEPS[1]:
        points += 2
        reasons.append(f"{count} services/pods/alerts (+2)")
    elif count >= ENTITY_STEPS[0]:
        points += 1
        reasons.append(f"{count} services/pods/alerts (+1)")

    asks = bounded(request.last_user_text()) or text
    asks_prose = split.prose if asks == text else split_text(asks).prose
    folded_asks = fold(asks_prose)
    markers = [name for name, pattern in _STEP_MARKERS if pattern.search(folded_asks)]
    if markers:
        extra = 2 if len(markers) >= 3 else 1
        points += extra
        reasons.append(f"multi-step ask ({', '.join(markers)}) (+{extra})")

    user_turns = sum(1 for m in request.messages if m.role == "user")
    if user_turns >= HISTORY_TURNS:
        points += 1
        reasons.append(f"{user_turns} user turns (+1)")

    if request.tools:
        points += 1
        reasons.append(f"{len(request.tools)} tool(s) (+1)")

    analysis = _ANALYSIS.search(folded_asks)
    if analysis:
        points += 1
        quoted = asks_prose[analysis.start() : analysis.end()]
        reasons.append(f"analysis ask '{quoted}' (+1)")

    final = max(MIN_SCORE, min(MAX_SCORE, points))
    if not reasons:
        reasons.append("short single ask")
    if final != points:
        reasons.append(f"capped at {final}")
    return ComplexityScore(score=final, reasons=tuple(reasons))
