"""Judging the router on labelled requests: ``aipool route eval FILE``.

A labelled file is JSONL (one object a line: ``text`` or a contract ``request``; ``intent`` or
``label``; optional ``complexity``, ``tier``, ``lang``, ``id``, ``priority``, ``tools``) or TSV
(``text <TAB> intent [<TAB> complexity [<TAB> tier]]``; ``\\n`` in the text is a line break; a
first line ``text<TAB>intent...`` is a header). :func:`read_labelled` raises
:class:`LabelledFileError` naming the line of the first mistake.

What is measured (every figure over the rows that carry the label it needs):

* intent accuracy, macro-F1 (the mean of the six intents' F1) and the confusion matrix;
* per language (``lang``), intent accuracy;
* complexity exact and within one level;
* the start-tier confusion matrix. Each off-diagonal cell carries its price: USD per 1,000
  requests of this file's traffic, the first hop's price (``prices.toml``) for the request's
  estimated input tokens plus ``OUTPUT_TOKENS`` of answer (fewer if its ``max_tokens`` is lower), minus what the labelled
  tier would have cost. Cloud-for-simple is money; local-for-complex is answer quality, so those
  cases are also counted and listed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from aipool.contract.request import Request, parse_request
from aipool.contract.route import Route
from aipool.errors import InvalidRequest
from aipool.prices.table import load_prices
from aipool.routing.intent import Intent
from aipool.routing.model import IntentModel
from aipool.routing.router import decide
from aipool.routing.table import RouteTable
from aipool.routing.tier_names import CLOUD_TIERS, LOCAL_TIERS, TIERS
from aipool.routing.tiers import tier_for

INTENTS = tuple(i.value for i in Intent)
#: Output tokens assumed for an answer when a tier is priced (a typical answer, not the allowance).
OUTPUT_TOKENS = 400


class LabelledFileError(ValueError):
    """A labelled file that cannot be read; the message names the line."""


@dataclass(frozen=True)
class Labelled:
    """One labelled request."""

    id: str
    request: Request
    intent: str
    complexity: int | None = None
    tier: str | None = None
    lang: str = ""


def _row_request(row: dict[str, Any], where: str) -> Request:
    payload: dict[str, Any]
    if isinstance(row.get("request"), dict):
        payload = dict(row["request"])
    elif isinstance(row.get("text"), str) and row["text"].strip():
        payload = {"prompt": row["text"]}
    else:
        raise LabelledFileError(f"{where}: needs a non-empty 'text' or a 'request' object")
    for key in ("priority", "tools", "intent_override"):
        if key in row and key != "intent_override":
            payload[key] = row[key]
    try:
        return parse_request(payload)
    except InvalidRequest as exc:
        raise LabelledFileError(f"{where}: invalid request ({exc.code}): {exc}") from None


def complexity_label(row: dict[str, Any], where: str) -> int | None:
    """A row's ``complexity`` label (1-5), None when it has none; a bad one names its line."""
    complexity = row.get("complexity")
    if complexity is not None and (
        isinstance(complexity, bool) or not isinstance(complexity, int) or not 1 <= complexity <= 5
    ):
        raise LabelledFileError(f"{where}: 'complexity' must be an integer 1-5")
    return complexity


def _labelled(row: dict[str, Any], where: str, default_id: str) -> Labelled:
    intent = row.get("intent", row.get("label"))
    if not isinstance(intent, str) or intent.upper() not in INTENTS:
        raise LabelledFileError(f"{where}: 'intent' must be one of {', '.join(INTENTS)}")
    complexity = complexity_label(row, where)
    tier = row.get("tier")
    if tier is not None and tier not in TIERS:
        raise LabelledFileError(f"{where}: 'tier' must be one of {', '.join(TIERS)}")
    return Labelled(
        id=str(row.get("id", default_id)),
        request=_row_request(row, where),
        intent=intent.upper(),
        complexity=complexity,
        tier=tier,
        lang=str(row.get("lang", "")),
    )


def parse_tsv_line(line: str, where: str) -> dict[str, Any]:
    """One TSV line as a row: ``text, intent[, complexity[, tier]]``."""
    cells = line.rstrip("\r\n").split("\t")
    if len(cells) < 2:
        raise LabelledFileError(f"{where}: expected 'text<TAB>intent[<TAB>complexity[<TAB>tier]]'")
    row: dict[str, Any] = {"text": cells[0].replace("\\n", "\n"), "intent": cells[1].strip()}
    if len(cells) > 2 and cells[2].strip():
        if not cells[2].strip().isdigit():
            raise LabelledFileError(f"{where}: complexity must be an integer 1-5")
        row["complexity"] = int(cells[2])
    if len(cells) > 3 and cells[3].strip():
        row["tier"] = cells[3].strip()
    return row


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The raw rows of a labelled JSONL or TSV file (``text``/``request`` and labels)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise LabelledFileError(f"{path}: not UTF-8 text") from None
    rows: list[dict[str, Any]] = []
    is_jsonl = path.suffix in (".jsonl", ".json", ".ndjson") or (
        path.suffix not in (".tsv", ".txt") and bool(lines) and lines[0].lstrip().startswith("{")
    )
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        where = f"{path}:{number}"
        if is_jsonl:
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LabelledFileError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise LabelledFileError(f"{where}: each line must be a JSON object")
        else:
            if number == 1 and line.lower().startswith("text\t"):
                continue
            row = parse_tsv_line(line, where)
        row.setdefault("id", f"{path.name}:{number}")
        row["_where"] = where
        rows.append(row)
    if not rows:
        raise LabelledFileError(f"{path}: no labelled requests in it")
    return rows


def read_labelled(path: Path) -> list[Labelled]:
    """Every labelled request of ``path``; :class:`LabelledFileError` at the first bad line."""
    return [_labelled(row, row["_where"], row["id"]) for row in read_rows(path)]


@dataclass
class Evaluation:
    """Everything ``aipool route eval`` prints, computed once."""

    rows: int = 0
    intent_pairs: list[tuple[str, str]] = field(default_factory=list)
    by_lang: dict[str, list[bool]] = field(default_factory=dict)
    complexity_pairs: list[tuple[int, int]] = field(default_factory=list)
    tier_pairs: list[tuple[str, str]] = field(default_factory=list)
    #: USD of each (label tier, got tier) cell, over the whole file.
    tier_cost: dict[tuple[str, str], Decimal] = field(default_factory=dict)
    local_for_complex: list[tuple[str, str, str, int]] = field(default_factory=list)
    misses: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def intent_accuracy(self) -> float:
        return _share(a == b for a, b in self.intent_pairs)

    @property
    def macro_f1(self) -> float:
        scores = []
        for label in INTENTS:
            tp = sum(1 for a, b in self.intent_pairs if a == label and b == label)
            fp = sum(1 for a, b in self.intent_pairs if a != label and b == label)
            fn = sum(1 for a, b in self.intent_pairs if a == label and b != label)
            if tp + fp + fn == 0:
                continue
            scores.append(2 * tp / (2 * tp + fp + fn))
        return sum(scores) / len(scores) if scores else 0.0

    @property
    def complexity_within_one(self) -> float:
        return _share(abs(a - b) <= 1 for a, b in self.complexity_pairs)

    @property
    def complexity_exact(self) -> float:
        return _share(a == b for a, b in self.complexity_pairs)

    @property
    def tier_accuracy(self) -> float:
        return _share(a == b for a, b in self.tier_pairs)

    @property
    def complex_to_local(self) -> float:
        """Share of the requests labelled cloud or critical that started on a local tier."""
        labelled = [(a, b) for a, b in self.tier_pairs if a in CLOUD_TIERS]
        return _share(b in LOCAL_TIERS for _, b in labelled)

    @property
    def simple_to_cloud(self) -> float:
        """Share of the requests labelled local that started on a cloud tier."""
        labelled = [(a, b) for a, b in self.tier_pairs if a in LOCAL_TIERS]
        return _share(b in CLOUD_TIERS for _, b in labelled)

    def per_thousand(self, cell: tuple[str, str]) -> Decimal:
        """The cell's USD per 1,000 requests of the evaluated traffic."""
        if not self.tier_pairs:
            return Decimal(0)
        return self.tier_cost.get(cell, Decimal(0)) * 1000 / len(self.tier_pairs)


def _share(flags: Any) -> float:
    values = list(flags)
    return sum(values) / len(values) if values else 0.0


def _tier_price(request: Request, tier: str, route: Route, table_prices: Any) -> Decimal:
    """What starting ``request`` at ``tier`` costs, at the first hop's price."""
    provider = {"local-small": "ollama", "local-code": "ollama", "cloud": "gemini",
                "tools": "nemotron", "critical": "claude"}[tier]  # fmt: skip
    model = route.chain[0].model if route.tier == tier else None
    output = min(request.max_tokens, OUTPUT_TOKENS)
    cost: Decimal = table_prices.price(provider, model).cost(
        request.estimated_input_tokens(), output
    )
    return cost


def evaluate(
    rows: list[Labelled], *, table: RouteTable | None = None, model: IntentModel | None = None
) -> Evaluation:
    """Route every row with ``decide`` and compare with its labels."""

    prices = load_prices()
    result = Evaluation(rows=len(rows))
    for row in rows:
        route = decide(row.request, table, model)
        result.intent_pairs.append((row.intent, route.intent))
        if route.intent != row.intent:
            result.misses.append((row.id, row.intent, route.intent))
        if row.lang:
            result.by_lang.setdefault(row.lang, []).append(route.intent == row.intent)
        if row.complexity is not None:
            result.complexity_pairs.append((row.complexity, route.complexity))
        want = row.tier
        if want is None and row.complexity is not None:
            want = tier_for(
                row.intent, row.complexity, priority=row.request.priority,
                has_tools=bool(row.request.tools), table=table,
            )  # fmt: skip
        if want is None:
            continue
        result.tier_pairs.append((want, route.tier))
        if want != route.tier:
            extra = _tier_price(row.request, route.tier, route, prices) - _tier_price(
                row.request, want, route, prices
            )
            cell = (want, route.tier)
            result.tier_cost[cell] = result.tier_cost.get(cell, Decimal(0)) + extra
            if want in CLOUD_TIERS and route.tier in LOCAL_TIERS:
                result.local_for_complex.append((row.id, want, route.tier, route.complexity))
    return result


def confusion(pairs: list[tuple[str, str]], names: tuple[str, ...]) -> list[list[int]]:
    """Counts by (label row, decided column) in the order of ``names``."""
    counts = Counter(pairs)
    return [[counts[(label, got)] for got in names] for label in names]
