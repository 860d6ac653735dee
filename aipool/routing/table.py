"""The route table: ordered rules, held as data in ``routes.toml``.

The packaged ``routes.toml`` holds the ADR-006 defaults; ``AIPOOL_ROUTES_FILE`` names a replacement.
A table is validated when loaded (unknown keys, providers, intents or chains raise
:class:`RouteTableError`), so a typo fails at start-up instead of silently routing everything to the
last rule. Loaded tables are cached by path and modification time: an edited file is picked up
on the next decision, an unchanged one is not parsed again.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from typing import Any

from aipool.chains import default_model
from aipool.contract.request import PRIORITIES, SERVICE_NAME
from aipool.contract.route import OTHER_SERVICE, Hop
from aipool.providers.catalog import CATALOG, PROVIDERS
from aipool.routing.intent import Intent
from aipool.routing.tier_names import TIERS
from aipool.settings import settings

DEFAULT_ROUTES_FILE = Path(__file__).with_name("routes.toml")
CHAIN_KINDS = ("general", "tools")
#: Providers that can be handed a request with tools.
TOOL_CAPABLE = frozenset(name for name, facts in CATALOG.items() if facts.tools)

_CONDITION_KEYS = frozenset({"intents", "min_complexity", "max_complexity", "priorities", "tools"})
_ACTION_KEYS = frozenset(
    {"provider", "model", "chain", "tier", "thinking", "on_refusal", "cache_ttl_s"}
)
#: What a rule may say a model's refusal does: end the chain, or ask the next provider.
REFUSAL_ACTIONS = ("end", "next")
_KEYS = _CONDITION_KEYS | _ACTION_KEYS | {"name"}


class RouteTableError(ValueError):
    """The route table file is malformed; the message names the rule and the key."""


@dataclass(frozen=True)
class Rule:
    """One routing rule: conditions that must all hold, and the first hop they choose."""

    name: str
    provider: str
    model: str | None = None
    chain: str | None = None
    intents: frozenset[str] | None = None
    min_complexity: int | None = None
    max_complexity: int | None = None
    priorities: frozenset[str] | None = None
    tools: bool | None = None
    #: The start tier this rule stands for (``aipool.routing.tiers``); None: from the provider.
    tier: str | None = None
    #: The share of ``max_tokens`` its requests' models may think; None: the tier's.
    thinking: float | None = None
    #: ``end``: a model's refusal ends the chain; ``next``: the next provider is asked; None:
    #: the chain's default (:data:`aipool.chains.REFUSAL_ENDS`).
    on_refusal: str | None = None
    #: How long an answer to a request this rule routes is kept in the response cache (s);
    #: None: never cached (:mod:`aipool.cache`).
    cache_ttl_s: int | None = None

    def matches(self, *, intent: str, complexity: int, priority: str, has_tools: bool) -> bool:
        """Whether every condition of this rule holds."""
        return (
            (self.intents is None or intent in self.intents)
            and (self.min_complexity is None or complexity >= self.min_complexity)
            and (self.max_complexity is None or complexity <= self.max_complexity)
            and (self.priorities is None or priority in self.priorities)
            and (self.tools is None or self.tools == has_tools)
        )

    def first_hop(self) -> Hop:
        """The hop this rule starts at; without a model, the provider's current default."""
        return Hop(self.provider, self.model or default_model(self.provider))

    @property
    def tool_capable(self) -> bool:
        """Whether this rule may take a request that carries tools."""
        return self.provider in TOOL_CAPABLE


#: The per-provider daily limits a service may be given a share of.
SHARE_KEYS = ("daily_tokens", "daily_requests")
_SERVICE_KEYS = (
    "name",
    "owner",
    "monthly_budget_usd",
    "max_priority",
    "shares",
    "cache",
    "cache_scope",
)
#: Intents whose answers are never cached unless ``[cache] never_intents`` says otherwise: an
#: alert's triage reads live data, and a tool call is an act to run, never a text to replay.
NEVER_CACHED_INTENTS = ("ALERT_TRIAGE", "TOOL_CALL")
_CACHE_KEYS = ("never_intents",)


@dataclass(frozen=True)
class Service:
    """A producing service declared in the route table, and its optional limits.

    ``monthly_budget_usd``: what its paid calls may cost a month, whatever the pool's budget;
    ``shares``: per provider, the fraction of a daily limit it may use (``{"gemini":
    {"daily_tokens": 0.1}}``); ``max_priority``: the highest priority its requests are routed
    with (``normal``: its requests never start at Claude as ``critical`` would). ``owner`` is who
    its budget alerts go to (an e-mail address or a webhook URL). ``cache``: whether its
    requests may be answered from the response cache (off by default); ``cache_scope``: the
    entries it reads and writes, its own (its name) unless services name the same scope to share.
    """

    key: str
    name: str
    owner: str | None = None
    monthly_budget_usd: Decimal | None = None
    max_priority: str | None = None
    shares: dict[str, dict[str, float]] = field(default_factory=dict)
    cache: bool = False
    cache_scope: str = ""

    @property
    def scope(self) -> str:
        """The response cache's entries this service reads and writes."""
        return self.cache_scope or self.key


@dataclass(frozen=True)
class RouteTable:
    """Rules in evaluation order, and the file they came from."""

    rules: tuple[Rule, ...]
    source: str
    #: Context windows in tokens, by ``"provider:model"`` or by provider (``aipool.routing.windows``).
    context_windows: dict[str, int] = field(default_factory=dict)
    #: The services that share the pool, by name (``[services.<name>]``).
    services: dict[str, Service] = field(default_factory=dict)
    #: Intents never answered from the response cache, whatever their rule says.
    never_cached: frozenset[str] = frozenset(NEVER_CACHED_INTENTS)
    #: A digest of the table's content: the response cache keys entries by it, so an edited
    #: table answers no request with what the old one routed.
    version: str = ""

    def service_of(self, named: str | None) -> str:
        """What a request naming ``named`` is counted as: a declared service, else ``other``."""
        return named if named is not None and named in self.services else OTHER_SERVICE


def _rule(raw: Any, index: int) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(raw, dict):
        raise RouteTableError(f"{where} must be a table")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise RouteTableError(f"{where} needs a 'name'")
    where = f"rule {name!r}"
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise RouteTableError(f"{where}: {'; '.join(_not_a_key(key) for key in unknown)}")
    provider = raw.get("provider")
    if provider not in PROVIDERS:
        raise RouteTableError(f"{where}: 'provider' must be one of {', '.join(PROVIDERS)}")
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise RouteTableError(f"{where}: 'model' must be a non-empty string")
    chain = raw.get("chain")
    if chain is not None and chain not in CHAIN_KINDS:
        raise RouteTableError(f"{where}: 'chain' must be one of {', '.join(CHAIN_KINDS)}")
    intents = raw.get("intents")
    if intents is not None:
        if not isinstance(intents, list) or not all(isinstance(i, str) for i in intents):
            raise RouteTableError(f"{where}: 'intents' must be a list of intent names")
        known = {i.value for i in Intent}
        bad = [i for i in intents if i.upper() not in known]
        if bad:
            raise RouteTableError(f"{where}: unknown intent(s) {', '.join(bad)}")
        intents = frozenset(i.upper() for i in intents)
    priorities = raw.get("priorities")
    if priorities is not None:
        if not isinstance(priorities, list) or not all(isinstance(p, str) for p in priorities):
            raise RouteTableError(f"{where}: 'priorities' must be a list of strings")
        # Requests name their priority in lower case: a rule for "Critical" would match none, and
        # critical work would silently stop starting where the rule sends it.
        bad = [p for p in priorities if p not in PRIORITIES]
        if bad:
            raise RouteTableError(f"{where}: {'; '.join(_not_a_priority(p) for p in bad)}")
        priorities = frozenset(priorities)
    bounds = {}
    for key in ("min_complexity", "max_complexity"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise RouteTableError(f"{where}: {key!r} must be an integer 1-5")
        if value is not None and not 1 <= value <= 5:
            raise RouteTableError(f"{where}: {key!r} must be between 1 and 5")
        bounds[key] = value
    tools = raw.get("tools")
    if tools is not None and not isinstance(tools, bool):
        raise RouteTableError(f"{where}: 'tools' must be true or false")
    tier = raw.get("tier")
    if tier is not None and tier not in TIERS:
        raise RouteTableError(f"{where}: 'tier' must be one of {', '.join(TIERS)}")
    thinking = raw.get("thinking")
    if thinking is not None and (
        isinstance(thinking, bool) or not isinstance(thinking, int | float) or not 0 <= thinking < 1
    ):
        raise RouteTableError(
            f"{where}: 'thinking' must be the share of max_tokens a model may think, from 0 "
            "(none) to below 1"
        )
    on_refusal = raw.get("on_refusal")
    if on_refusal is not None and on_refusal not in REFUSAL_ACTIONS:
        raise RouteTableError(f"{where}: 'on_refusal' must be one of {', '.join(REFUSAL_ACTIONS)}")
    cache_ttl_s = raw.get("cache_ttl_s")
    if cache_ttl_s is not None and (
        isinstance(cache_ttl_s, bool) or not isinstance(cache_ttl_s, int) or cache_ttl_s < 1
    ):
        raise RouteTableError(f"{where}: 'cache_ttl_s' must be a whole number of seconds, >= 1")
    if cache_ttl_s is not None and (chain == "tools" or tools is True):
        raise RouteTableError(
            f"{where}: tool calls are never cached (an answer there is an act to run); remove "
            "'cache_ttl_s'"
        )
    return Rule(
        name=name,
        provider=provider,
        model=model,
        chain=chain,
        intents=intents,
        min_complexity=bounds["min_complexity"],
        max_complexity=bounds["max_complexity"],
        priorities=priorities,
        tools=tools,
        tier=tier,
        thinking=None if thinking is None else float(thinking),
        on_refusal=on_refusal,
        cache_ttl_s=cache_ttl_s,
    )


def _not_a_priority(priority: str) -> str:
    found = difflib.get_close_matches(priority.lower(), PRIORITIES, n=1, cutoff=0.6)
    hint = f"did you mean {found[0]!r}? " if found else ""
    return f"unknown priority {priority!r} ({hint}priorities are {', '.join(PRIORITIES)})"


def _not_a_key(key: str, valid: tuple[str, ...] = tuple(sorted(_KEYS))) -> str:
    found = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    hint = f"did you mean {found[0]!r}?" if found else f"valid: {', '.join(valid)}"
    return f"unknown key {key!r} ({hint})"


def parse_table(data: dict[str, Any], source: str = "<data>") -> RouteTable:
    """Build a table from parsed TOML (``{"rules": [...]}``); raise :class:`RouteTableError`."""
    sections = ("rules", "context_windows", "services", "cache")
    extra = sorted(set(data) - set(sections))
    if extra:
        raise RouteTableError(f"{source}: {'; '.join(_not_a_key(key, sections) for key in extra)}")
    raw_rules = data.get("rules")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RouteTableError(f"{source}: needs at least one [[rules]] entry")
    rules = tuple(_rule(raw, i) for i, raw in enumerate(raw_rules))
    names = [r.name for r in rules]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise RouteTableError(f"{source}: rule name(s) used twice: {', '.join(duplicated)}")
    return RouteTable(
        rules=rules,
        source=source,
        context_windows=_windows(data.get("context_windows", {}), source),
        services=_services(data.get("services", {}), source),
        never_cached=_never_cached(data.get("cache", {}), source),
        version=hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[
            :16
        ],
    )


def _never_cached(raw: Any, source: str) -> frozenset[str]:
    """``[cache]``: the intents never answered from the response cache."""
    if not isinstance(raw, dict):
        raise RouteTableError(f"{source}: 'cache' must be a table")
    unknown = sorted(set(raw) - set(_CACHE_KEYS))
    if unknown:
        raise RouteTableError(
            f"{source}: cache: {'; '.join(_not_a_key(k, _CACHE_KEYS) for k in unknown)}"
        )
    intents = raw.get("never_intents", list(NEVER_CACHED_INTENTS))
    known = {i.value for i in Intent}
    if not isinstance(intents, list) or not all(
        isinstance(i, str) and i.upper() in known for i in intents
    ):
        raise RouteTableError(
            f"{source}: cache.never_intents must be a list of intents ({', '.join(sorted(known))})"
        )
    # A tool call is an act to run: never replayed, whatever the table says.
    return frozenset(i.upper() for i in intents) | {"TOOL_CALL"}


def _services(raw: Any, source: str) -> dict[str, Service]:
    """``[services.<name>]``: the services that share the pool, and their optional limits."""
    if not isinstance(raw, dict):
        raise RouteTableError(f"{source}: 'services' must be a table of [services.<name>]")
    services = {}
    for key, spec in raw.items():
        where = f"{source}: service {key!r}"
        if not SERVICE_NAME.fullmatch(key) or key == OTHER_SERVICE:
            raise RouteTableError(
                f"{where}: a name of letters, digits, '-', '_' or '.' (not {OTHER_SERVICE!r})"
            )
        if not isinstance(spec, dict):
            raise RouteTableError(f"{where} must be a table")
        unknown = sorted(set(spec) - set(_SERVICE_KEYS))
        if unknown:
            raise RouteTableError(
                f"{where}: {'; '.join(_not_a_key(k, _SERVICE_KEYS) for k in unknown)}"
            )
        budget = spec.get("monthly_budget_usd")
        if budget is not None:
            try:
                budget = Decimal(str(budget))
            except InvalidOperation:
                budget = None
            if budget is None or not budget.is_finite() or budget <= 0:
                raise RouteTableError(f"{where}: 'monthly_budget_usd' must be a positive amount")
        ceiling = spec.get("max_priority")
        if ceiling is not None and ceiling not in PRIORITIES:
            raise RouteTableError(f"{where}: 'max_priority' must be one of {', '.join(PRIORITIES)}")
        cache = spec.get("cache", False)
        if not isinstance(cache, bool):
            raise RouteTableError(f"{where}: 'cache' must be true or false")
        scope = spec.get("cache_scope", "")
        if scope != "" and (not isinstance(scope, str) or not SERVICE_NAME.fullmatch(scope)):
            raise RouteTableError(
                f"{where}: 'cache_scope' must be a name of letters, digits, '-', '_' or '.'"
            )
        services[key] = Service(
            key=key,
            name=str(spec.get("name") or key),
            owner=str(spec["owner"]) if spec.get("owner") else None,
            monthly_budget_usd=budget,
            max_priority=ceiling,
            shares=_shares(spec.get("shares", {}), where),
            cache=cache,
            cache_scope=scope,
        )
    return services


def _shares(raw: Any, where: str) -> dict[str, dict[str, float]]:
    if not isinstance(raw, dict):
        raise RouteTableError(f"{where}: 'shares' must be a table of provider = {{limit = share}}")
    shares: dict[str, dict[str, float]] = {}
    for provider, limits in raw.items():
        if provider not in PROVIDERS:
            raise RouteTableError(
                f"{where}: shares of {provider!r}: a provider, one of {', '.join(PROVIDERS)}"
            )
        if not isinstance(limits, dict) or not limits:
            raise RouteTableError(f"{where}: shares.{provider} must name a limit and its share")
        for limit, share in limits.items():
            if limit not in SHARE_KEYS:
                raise RouteTableError(
                    f"{where}: shares.{provider}: {_not_a_key(limit, SHARE_KEYS)}"
                )
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
                raise RouteTableError(
                    f"{where}: shares.{provider}.{limit} must be a fraction in (0, 1]"
                )
        shares[provider] = {limit: float(share) for limit, share in limits.items()}
    return shares


def _windows(raw: Any, source: str) -> dict[str, int]:
    """``[context_windows]``: keys ``provider`` or ``provider:model``, values positive integers."""
    if not isinstance(raw, dict):
        raise RouteTableError(f"{source}: 'context_windows' must be a table of model = tokens")
    windows = {}
    for key, value in raw.items():
        provider = key.partition(":")[0]
        if provider not in PROVIDERS:
            raise RouteTableError(
                f"{source}: context_windows key {key!r} must start with one of {', '.join(PROVIDERS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RouteTableError(f"{source}: context_windows {key!r} must be a positive integer")
        windows[key] = value
    return windows


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> RouteTable:
    # ``mtime_ns`` is only part of the cache key: an edited file is parsed again.
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise RouteTableError(f"{path}: {exc}") from None
    return parse_table(data, source=path)


def routes_path() -> Path:
    """The route file in force: ``AIPOOL_ROUTES_FILE`` if set, else the packaged default."""

    return settings().routes_file or DEFAULT_ROUTES_FILE


def load_table(path: str | os.PathLike[str] | None = None) -> RouteTable:
    """Load (or reuse) the route table at ``path``, or at :func:`routes_path` when none is given."""
    target = Path(path) if path is not None else routes_path()
    try:
        mtime = target.stat().st_mtime_ns
    except OSError as exc:
        raise RouteTableError(f"cannot read route table {target}: {exc.strerror}") from None
    return _load(str(target), mtime)
