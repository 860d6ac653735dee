"""Printing routing decisions and evaluations for people (the ``aipool route`` commands).

The screen may show words of the text the operator typed (matched keywords, the model's top
features); the :class:`~aipool.contract.route.Route` it renders holds none.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aipool.contract.route import Route
from aipool.routing.evaluate import INTENTS, Evaluation, confusion
from aipool.routing.intent import matched_words
from aipool.routing.model import load_model
from aipool.routing.tier_names import TIERS

_KINDS = {"c": "chars", "w": "word", "b": "words", "s": "rule signal", "m": "fact"}


def _feature(name: str) -> str:
    kind, _, value = name.partition(":")
    label = _KINDS.get(kind.rstrip("0123456789"), kind)
    return f"{value!r} ({label})"


def render_route(route: Route, console: Console, text: str | None = None) -> None:
    """Print ``route``: the decision, the chain in order, the reasons; with ``text``, also what
    matched in it (keywords, the model's strongest features): for the terminal only."""
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row(
        "intent", f"{route.intent}  (confidence {route.confidence:.2f}, by {route.source or '-'})"
    )
    summary.add_row("complexity", f"{route.complexity} / 5")
    summary.add_row("rule", route.rule or "-")
    summary.add_row("tier", route.tier or "-")
    chain = Text()
    for i, hop in enumerate(route.chain):
        if i:
            chain.append(" → ", style="dim")
        chain.append(str(hop), style="bold green" if i == 0 else ("dim" if hop.terminal else ""))
    summary.add_row("chain", chain)
    console.print(summary)
    # The reason is one "; "-separated line in the route; one part per line reads better here.
    for part in route.reason.split("; "):
        console.print(Text(f"  • {part}", style="dim"))
    if text is None:
        return

    words = matched_words(text)
    if words:
        console.print(Text("  matched (not stored):", style="bold"))
        for intent, label, matched in words:
            console.print(Text(f"    {intent}: {label} {matched!r}", style="dim"))
    if route.source in ("model", "rules"):
        top = load_model().top_features(text, route.intent)
        if top:
            console.print(
                Text(f"  model's strongest features for {route.intent} (not stored):", style="bold")
            )
            for name, weight in top:
                console.print(Text(f"    {_feature(name)}  {weight:+.2f}", style="dim"))


def _matrix(title: str, pairs: list[tuple[str, str]], names: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("label \\ got", style="bold")
    for name in names:
        table.add_column(name, justify="right")
    for name, row in zip(names, confusion(pairs, names), strict=True):
        table.add_row(name, *[str(n) if n else "." for n in row])
    return table


def render_evaluation(result: Evaluation, console: Console, misses: int = 20) -> None:
    """Print an :class:`~aipool.routing.evaluate.Evaluation`: figures, matrices, priced tier cells,
    local-for-complex cases and the first ``misses`` intent misses."""
    console.print(f"{result.rows} labelled requests")
    console.print(f"intent accuracy {result.intent_accuracy:.1%}   macro-F1 {result.macro_f1:.3f}")
    for lang, flags in sorted(result.by_lang.items()):
        console.print(f"  {lang:<6} {sum(flags) / len(flags):.1%} of {len(flags)}")
    if result.complexity_pairs:
        console.print(
            f"complexity within one level {result.complexity_within_one:.1%}   "
            f"exact {result.complexity_exact:.1%}   ({len(result.complexity_pairs)} labelled)"
        )
    console.print(_matrix("intent confusion", result.intent_pairs, INTENTS))
    if not result.tier_pairs:
        console.print("no complexity or tier labels: no tier matrix")
    else:
        console.print(
            f"start tier right {result.tier_accuracy:.1%}   complex → local "
            f"{result.complex_to_local:.1%}   simple → cloud {result.simple_to_cloud:.1%}"
        )
        console.print(_matrix("tier confusion", result.tier_pairs, TIERS))
        priced = sorted(result.tier_cost, key=lambda cell: -abs(result.tier_cost[cell]))
        if priced:
            console.print("off-diagonal tier cells, USD per 1,000 requests of this traffic:")
            for cell in priced:
                count = sum(1 for pair in result.tier_pairs if pair == cell)
                console.print(
                    f"  {cell[0]} → {cell[1]}: {count} request(s), "
                    f"{result.per_thousand(cell):+.4f} $/1k"
                )
        if result.local_for_complex:
            console.print(f"local for complex (answer quality): {len(result.local_for_complex)}")
            for ident, want, got, complexity in result.local_for_complex:
                console.print(f"  {ident}: wanted {want}, started {got} (complexity {complexity})")
    if result.misses and misses:
        console.print(f"intent misses (first {min(misses, len(result.misses))}):")
        for ident, want, got in result.misses[:misses]:
            console.print(f"  {ident}: {want} → {got}")
