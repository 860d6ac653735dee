"""The router: a request in, a :class:`Route` (intent, complexity, tier, chain, reason) out.

``decide`` is a pure function of the request, the route table and the intent model: the same
request always gets the same route, so it does not matter whether the producer routes locally or
the ``router`` queue task does it. Nothing here touches the network.

Who decides the intent, in order (the first that applies):

==================  =====================================================  ==============
signal              intent                                                 ``source``
==================  =====================================================  ==============
``request.intent``  the producer's override                                ``explicit``
tools attached      ``TOOL_CALL``: only a tool-capable chain can answer    ``tools``
model sure          the model's intent, probability >= its threshold;      ``model``
                    ``TOOL_CALL`` only with a word of an act in the text
model unsure        the keyword rules' intent (``CHAT`` when none match)   ``rules``
==================  =====================================================  ==============

The tool chain ends in a refusal, so the model's ``TOOL_CALL`` needs a word a request to act is
made of (:func:`~aipool.routing.intent.names_an_act`: an operation, an act such as silence or
page, a go-ahead); without one the keyword rules decide. A plain sentence is not sent there on its
length, its script or the model's prior for short texts (issue #40); the model reads no length or
script at all (:func:`~aipool.routing.features.shape_features` feed the complexity head only).

A fenced block of code is one of the model's features (``m:code-block``) rather than a rule of its
own: "summarize this diff" and "write release notes from it" paste code too, and the dev split
showed the model weighing the fence against the ask better than an override would.

``Route.reason`` names the rules and the signals that decided, with counts, never words of the
prompt: it is stored with the result, the ledger row and Flower's task view (issue #21).
``aipool route`` shows the words and the model's top features on the operator's screen only
(:mod:`aipool.routing.render`).

A route travels as JSON inside Celery task kwargs and in the result (``Route.to_dict``)::

    {"intent": "CODE_REVIEW", "complexity": 3, "confidence": 0.83, "rule": "code_review",
     "tier": "local-code",
     "chain": [{"provider": "ollama", "model": "qwen2.5:7b"},
               {"provider": "gemini", "model": "gemini-2.5-flash"}, ...,
               {"provider": "static", "model": "static"}],
     "reason": "intent CODE_REVIEW: model 0.83, keyword signals: asks for a review; ..."}

Hops are objects rather than ``"provider:model"`` strings because Ollama model ids contain colons
themselves; ``from_dict`` accepts both forms all the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from aipool.chains import REFUSAL_ENDS, build_chain
from aipool.contract.request import PRIORITIES, Message, Request
from aipool.contract.route import Route
from aipool.routing.complexity import score
from aipool.routing.features import read
from aipool.routing.intent import Intent, IntentDecision, classify, names_an_act
from aipool.routing.model import IntentModel, load_model
from aipool.routing.table import RouteTable, Rule, load_table
from aipool.routing.text import TextMemo
from aipool.routing.tiers import THINKING_SHARES, choose_rule, tier_of_rule


@dataclass(frozen=True)
class IntentChoice:
    """The intent the router takes, how sure it is, who decided, and why (labels, no text)."""

    intent: str
    confidence: float
    source: str
    why: str


def _labels(labels: list[str], limit: int = 4) -> str:
    counted: dict[str, int] = {}
    for label in labels:
        counted[label] = counted.get(label, 0) + 1
    parts = [label for label in counted]
    shown = ", ".join(parts[:limit])
    return shown + (f", +{len(parts) - limit} more" if len(parts) > limit else "")


def choose_intent(
    request: Request, model: IntentModel | None = None, memo: TextMemo | None = None
) -> IntentChoice:
    """Decide the intent of ``request``: hard signals first, then the model, then the rules
    (``memo``: the decision's, shared with :func:`choose_complexity`)."""
    memo = memo if memo is not None else TextMemo()
    if request.intent or request.tools:
        decided: IntentDecision = classify(request)
        source = "explicit" if request.intent else "tools"
        return IntentChoice(decided.intent, 1.0, source, decided.reasons[0])
    model = model if model is not None else load_model()
    text = request.last_user_text() or request.text()
    reading = read(text, memo)
    guess = model.predict(text, reading)
    signals = list(reading[2])
    keywords = (
        f"keyword signals: {_labels(signals)} ({len(signals)})" if signals else "no keyword signal"
    )
    sure = guess.confidence >= model.threshold
    if sure and (guess.intent != Intent.TOOL_CALL or names_an_act(reading[1].prose, memo)):
        return IntentChoice(
            guess.intent,
            round(guess.confidence, 2),
            "model",
            f"model {guess.confidence:.2f}; {keywords}",
        )
    rules = classify(request, memo)
    if sure:
        # The tool chain ends in a refusal: a text with no word of an act is not sent there on
        # what else the model read in it (its length, its script, its prior; issue #40).
        unsure = f"model {guess.intent} {guess.confidence:.2f} without a word of an act"
    else:
        unsure = f"model unsure ({guess.intent} {guess.confidence:.2f} < {model.threshold:.2f})"
    if rules.intent == Intent.CHAT and rules.confidence <= 0.3:
        return IntentChoice(
            Intent.CHAT.value, rules.confidence, "rules", f"{unsure}; no keyword signal, CHAT"
        )
    return IntentChoice(
        rules.intent,
        rules.confidence,
        "rules",
        f"{unsure}; keyword rules: {_labels(list(rules.reasons))}",
    )


@dataclass(frozen=True)
class ComplexityChoice:
    """The level the router takes and why (counts and labels, no text)."""

    level: int
    why: str


#: The share of the complexity head's probability on levels 4 and 5 (the cloud's, routes.toml)
#: from which a request is taken as complex. Below an even split on purpose: a complex request
#: started on a small local model costs its answer, a simple one started in the cloud costs
#: cents. Chosen on dev with a model trained on train alone (docs/routing.md): complex -> local
#: 6.6 % -> 1.3 %, simple -> cloud 1.4 % -> 1.7 %, start tier 0.919 -> 0.925 against the most
#: probable level.
COMPLEX_SHARE = 0.4
#: Below the cloud, the share of levels 1-3's probability on level 3 from which a request takes
#: the bigger local model.
MEDIUM_SHARE = 0.5


def choose_complexity(
    request: Request, model: IntentModel, memo: TextMemo | None = None
) -> ComplexityChoice:
    """The complexity of ``request``: where the model's complexity head (fed the keyword scorer's
    points) puts its probability, at the levels where a level moves the tier: 4 or more from
    :data:`COMPLEX_SHARE` on levels 4-5, else 3 from :data:`MEDIUM_SHARE` of the rest on 3;
    never below the scorer's floor (several services to correlate are at least 4). Without a
    complexity head in the model file, the scorer's own points."""
    scored = score(request, memo)
    counted = ", ".join(scored.reasons)
    shares = model.level_shares(request.text(), scored.score)
    if shares is None:
        return ComplexityChoice(scored.score, counted)
    p1, p2, p3, p4, p5 = shares
    if p4 + p5 >= COMPLEX_SHARE:
        level = 4 if p4 >= p5 else 5
    else:
        level = 3 if p3 >= MEDIUM_SHARE * (p1 + p2 + p3) else (2 if p2 >= p1 else 1)
    return ComplexityChoice(
        max(level, scored.floor),
        f"model {level} (4-5: {p4 + p5:.2f}, 3: {p3:.2f}); points {scored.score}: {counted}",
    )


def decide(
    request: Request, table: RouteTable | None = None, model: IntentModel | None = None
) -> Route:
    """Route ``request``: choose the intent, score the complexity, take the first matching rule,
    build the ADR chain.

    A request that carries tools always ends on the tool chain (``… → refuse``) and only rules whose
    provider can call tools are considered for it. When no rule matches, the chain starts at the
    ADR default (``ollama`` or ``nemotron``). ``reason`` holds no text of the prompt.
    """
    table = table if table is not None else load_table()
    model = model if model is not None else load_model()
    # One memo per decision: the intent's model and rules and the complexity score read the same
    # window, split and prose of a short message, and each is worked out once.
    memo = TextMemo()
    intent = choose_intent(request, model, memo)
    complexity = choose_complexity(request, model, memo)
    has_tools = bool(request.tools)
    service = table.service_of(request.service)
    priority = routed_priority(request, table)
    chosen = choose_rule(
        table,
        intent=intent.intent,
        complexity=complexity.level,
        priority=priority,
        has_tools=has_tools,
    )
    tools_chain = has_tools or (chosen is not None and chosen.chain == "tools")
    first = chosen.first_hop() if chosen is not None else None
    chain = build_chain(first, tools=tools_chain)
    rule_name = chosen.name if chosen is not None else "default"
    tier = tier_of_rule(chosen)
    reason = (
        f"intent {intent.intent}: {intent.why}; "
        f"complexity {complexity.level}: {complexity.why}; "
        f"rule {rule_name} → {chain[0]} [{tier}]" + (" (tool chain)" if tools_chain else "")
    )
    if priority != request.priority:
        reason += f"; priority {request.priority} held to {service}'s {priority}"
    return Route(
        intent=intent.intent,
        complexity=complexity.level,
        chain=chain,
        reason=reason,
        confidence=intent.confidence,
        rule=rule_name,
        tier=tier,
        source=intent.source,
        service=service,
        thinking=thinking_share(chosen, tier),
        refusal_ends=refusal_ends(chosen, tools=tools_chain),
    )


def thinking_share(rule: Rule | None, tier: str) -> float:
    """The share of ``max_tokens`` a route's models may think: its rule's, else its tier's."""
    if rule is not None and rule.thinking is not None:
        return rule.thinking
    return THINKING_SHARES.get(tier, 0.0)


def refusal_ends(rule: Rule | None, *, tools: bool) -> bool:
    """Whether a refusal ends a route's chain: its rule's ``on_refusal``, else the chain's."""
    if rule is not None and rule.on_refusal is not None:
        return rule.on_refusal == "end"
    return REFUSAL_ENDS["tools" if tools else "general"]


def routed_priority(request: Request, table: RouteTable | None = None) -> str:
    """The priority ``request`` is routed with: its own, held to its service's ceiling."""
    table = table if table is not None else load_table()
    service = table.services.get(table.service_of(request.service))
    if service is None or service.max_priority is None:
        return request.priority
    ceiling = PRIORITIES.index(service.max_priority)
    return PRIORITIES[min(PRIORITIES.index(request.priority), ceiling)]


def explain(text: str, table: RouteTable | None = None, model: IntentModel | None = None) -> Route:
    """Route a one-message request holding ``text``, as ``aipool route "<text>"`` does."""
    return decide(Request(messages=(Message(role="user", content=text),)), table, model)
