"""What a PromQL expression reads: the metric names and the label names it mentions.

Enough of PromQL for the pool's own rules and dashboard: selectors, matchers, aggregations with
``by``/``without``, vector matching with ``on``/``ignoring``, functions and range selectors.
"""

from __future__ import annotations

import re

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_RANGE = re.compile(r"\[[^\]]*\]")
_MATCHERS = re.compile(r"\{([^}]*)\}")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_NUMBER = re.compile(r"(?<![\w:])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "inf",
    "nan",
}
_LABEL_FUNCTIONS = re.compile(r"label_replace\s*\(")


def referenced(expr: str) -> tuple[set[str], set[str]]:
    """``(metric names, label names)`` that ``expr`` selects, matches or groups by.

    Labels that ``label_replace`` creates are not reported (their source label is).
    """
    text = _STRING.sub('""', expr)
    if _LABEL_FUNCTIONS.search(text):
        raise ValueError("label_replace is not followed here; check such expressions by hand")
    text = _RANGE.sub(" ", text)
    labels: set[str] = set()
    for group in _MATCHERS.findall(text):
        labels |= {
            m.group(0) for m in re.finditer(r"[a-zA-Z_][a-zA-Z0-9_]*(?=\s*(?:=~|!~|!=|=))", group)
        }
    text = _MATCHERS.sub(" ", text)
    for group in _GROUPING.findall(text):
        labels |= {name.strip() for name in group.split(",") if name.strip()}
    text = _NUMBER.sub(" ", _GROUPING.sub(" ", text))
    names = set()
    for match in _NAME.finditer(text):
        name = match.group(0)
        after = text[match.end() :].lstrip()
        if name.lower() in _KEYWORDS or after.startswith("("):
            continue  # an operator, or a function or aggregation being called
        if text[: match.start()].endswith("$"):
            continue  # a Grafana variable
        names.add(name)
    return names, labels
