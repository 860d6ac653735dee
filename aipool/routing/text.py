"""Splitting a message into the prose a user wrote and the code or logs they pasted.

Both the intent classifier and the complexity scorer need this split: the *ask* lives in the prose
(``restart`` inside a pasted ``kubectl`` command is not a request to restart anything), while the
pasted blocks are evidence of their own (a diff to review, a log to read).

Two helpers keep routing cheap whatever a producer pastes:

* :func:`bounded` keeps the head and the tail of a long message. What a user asks sits around a
  paste, at its start or its end; the middle of a 100 KB log says nothing the first and last few
  kilobytes do not, and every regular expression costs time per character it reads.
* :class:`TextMemo` does each of these steps once per decision: the keyword rules, the model's
  features and the complexity score read windows of the same message, their splits, their folded
  prose and the keyword signals found in it (a message of up to 2,048 characters is its own window
  for all three: one split, one search per signal).
* :func:`compile_folded` compiles a case-insensitive pattern to match :func:`fold`-ed text, and
  lets Python's ``re`` skip the positions where no match can start. ``re`` tries every
  alternative of a pattern at every position, unless each alternative starts with a literal
  character (it then jumps over characters that start none of them); case-insensitive literals
  and a leading ``\\b`` both defeat that, and so does one alternative that starts with a group.
  So patterns run lowercased against lowercased text, an alternative that starts with a word
  boundary and a letter starts with the letter instead (:func:`letter_first`), and a leading
  group's words become alternatives of their own when that lets every alternative start with a
  literal (:func:`literal_first`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

_T = TypeVar("_T")

# A fence opens with three backticks (optionally a language tag) and closes with three backticks;
# an unclosed fence runs to the end of the text, as chat clients render it.
_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)

# What pasted *code* looks like, as opposed to pasted logs or command output.
_CODE_LINE = re.compile(
    r"(?m)^\s*(?:[+-](?![+-])\s*\S|@@|def |class |func |import |from \S+ import|return\b|if\b.*[:{]$|"
    r"for\b.*[:{]$|try:|except\b|SELECT\b|WHERE\b|apiVersion:|kind:|spec:|resource \"|FROM \w|RUN |"
    r"CMD |COPY |[\w.]+\s*:=|const |let |var |\w+\(.*\)\s*[{;]?$|\{\{|- alert:|expr:|livenessProbe:|"
    r"resources:|rm |kubectl |\w+:\s*$)",
    re.IGNORECASE,
)
_LOG_LINE = re.compile(
    r"(?m)^\s*(?:\d{4}-\d\d-\d\dT|\d\d:\d\d(?::\d\d)?\b|\[?(?:ERROR|WARN|WARNING|INFO|DEBUG)\b|"
    r"NAME\s+READY|Name:|Status:|Events:|Conditions:|Warning\s+\w+|Normal\s+\w+)",
)


#: Characters of a long message's start and end that routing reads (see :func:`bounded`).
HEAD_CHARS = 2048
TAIL_CHARS = 1024
_FENCE_MARK = "```"


def bounded(text: str, head: int = HEAD_CHARS, tail: int = TAIL_CHARS) -> str:
    """``text``, or its first ``head`` and last ``tail`` characters when it is longer.

    The two ends are joined by a newline; when the cut-out middle holds an odd number of fence
    marks (a block opened before the cut and closed after it, or the reverse), the join carries a
    fence mark too, so the tail's prose stays prose and its blocks stay blocks.
    """
    if len(text) <= head + tail:
        return text
    end = len(text) - tail
    join = "\n```\n" if text.count(_FENCE_MARK, head, end) % 2 else "\n"
    return text[:head] + join + text[end:]


def fold(text: str) -> str:
    """``text`` with its ASCII letters lowercased and nothing else changed, one character for
    one, so match offsets still point into ``text`` (what ``re.IGNORECASE | re.ASCII`` folds)."""
    if text.isascii():
        return text.lower()
    # In UTF-8 every byte of a non-ASCII character is >= 0x80, so bytes.lower() changes ASCII
    # letters only; both steps run in C.
    return text.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass")


def fold_pattern(pattern: str) -> str:
    """``pattern`` with its literal ASCII letters lowercased, for matching :func:`fold`-ed text.

    An escape (``\\b``, ``\\S``, ``\\w``...) is kept as written. A pattern that holds a
    case-sensitive group (``(?-i:...)``) cannot be folded: :class:`ValueError`.
    """
    if "(?-i" in pattern:
        raise ValueError("a case-sensitive pattern cannot match folded text")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        out.append(pattern[i].lower() if pattern[i].isascii() else pattern[i])
        i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class opening at ``start``."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    # A "]" first in a class (after any "^") is a literal, not the class's end.
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    return len(pattern)


def _tokens(pattern: str) -> Iterator[tuple[int, str, int]]:
    """Each token of ``pattern`` (an escape, a character class, one character) with its index
    and the depth of groups it sits in (a group's own parentheses at the depth outside it)."""
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        end = i + 2 if char == "\\" else _class_end(pattern, i) if char == "[" else i + 1
        if char == ")":
            depth -= 1
        yield i, pattern[i:end], depth
        if char == "(":
            depth += 1
        i = end


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (``|`` outside groups and classes)."""
    cuts = [i for i, token, depth in _tokens(pattern) if token == "|" and depth == 0]
    starts = [0, *(cut + 1 for cut in cuts)]
    ends = [*cuts, len(pattern)]
    return [pattern[start:end] for start, end in zip(starts, ends, strict=True)]


_BOUNDARY_THEN_LETTER = re.compile(r"\\b([A-Za-z0-9_])(?![?*+{])")


def letter_first(pattern: str) -> str:
    """``pattern`` with each top-level alternative ``\\bxyz`` written ``x(?<!\\wx)yz``.

    Both match the same spans: a word boundary before a word character ``x`` means the character
    before ``x`` is not a word character (or there is none), which the lookbehind checks once
    ``x`` is matched. ``\\b`` and ``\\w`` follow the same flags (ASCII or Unicode), so the two
    agree under either. Starting with the literal lets ``re`` skip ahead (see the module's doc).
    """
    rewritten = []
    for alternative in _alternatives(pattern):
        start = _BOUNDARY_THEN_LETTER.match(alternative)
        if start is not None:
            letter = start.group(1)
            alternative = f"{letter}(?<!\\w{letter}){alternative[start.end() :]}"
        rewritten.append(alternative)
    return "|".join(rewritten)


#: The most alternatives of a leading group :func:`literal_first` spreads. ``re`` tries an
#: alternation's words one by one wherever it stops; a long word list (the acts of
#: :mod:`~aipool.routing.intent`) tried at every letter costs more than at word starts only.
SPREAD_WORDS = 24
_LEADING_GROUP = re.compile(r"(\\b)?\(\?:")
_NOT_LITERAL = frozenset("\\([.^$|")
_QUANTIFIERS = frozenset("?*+{")


def _captures(pattern: str) -> bool:
    """Whether ``pattern`` holds a capturing group (spreading one would renumber the groups)."""
    return any(
        token == "(" and (not pattern.startswith("?", i + 1) or pattern.startswith("?P<", i + 1))
        for i, token, _depth in _tokens(pattern)
    )


def _spread(alternative: str) -> list[str]:
    """``alternative`` with its leading group spread: ``\\b(?:a|b)c`` as ``\\bac`` and ``\\bbc``,
    ``(?:a )?b`` as ``a b`` and ``b``, in the order ``re`` tries them (so the same match is
    found first); as it is when it does not start with a group that can be spread."""
    if alternative.startswith("["):
        return _spread_class(alternative)
    group = _leading_group(alternative)
    if group is None or _captures(alternative):
        return [alternative]
    boundary, words, rest = group
    if rest.startswith("?") and rest[1:2] not in ("?", "+"):
        # Greedy: each word of the group first, then none of them.
        rest, words = rest[1:], [*words, ""]
    if rest[:1] in _QUANTIFIERS or len(words) > SPREAD_WORDS:
        return [alternative]
    return [spread for word in words for spread in _spread(boundary + word + rest)]


def _spread_class(alternative: str) -> list[str]:
    """``alternative`` starting with a class of single characters (``[.!?\\n]x``) as one
    alternative per character (``\\.x``, ``!x``, ``\\?x``, ``\\nx``): the same spans, as the
    characters differ (no two can match at one position); as it is for a negated class, a
    range, a class escape (``\\s``) or a repeated class."""
    end = _class_end(alternative, 0)
    rest = alternative[end:]
    members = [token for _i, token, _depth in _tokens(alternative[1 : end - 1])]
    # Inside a class "." and "?" are themselves; "^" first negates, "-" makes a range.
    plain = all(
        token not in ("^", "-", "[") if len(token) == 1 else _literal_token(token)
        for token in members
    )
    if (
        not members
        or not plain
        or rest[:1] in _QUANTIFIERS
        or not alternative.endswith("]", 0, end)
    ):
        return [alternative]
    return [(token if len(token) == 2 else re.escape(token)) + rest for token in members]


def _literal_token(token: str) -> bool:
    """Whether ``token`` (one character or an escape) matches one character, itself: a plain
    character, ``\\n``, ``\\t`` or an escaped punctuation mark."""
    if token[0] != "\\":
        return token not in _NOT_LITERAL
    return len(token) == 2 and (token[1] in "nt" or not token[1].isalnum())


def _first_token(alternative: str) -> str:
    return alternative[:2] if alternative.startswith("\\") else alternative[:1]


def _starts_with_literal(alternative: str) -> bool:
    """Whether ``alternative`` starts with a character matched as itself, once."""
    first = _first_token(alternative)
    return (
        bool(first)
        and _literal_token(first)
        and alternative[len(first) : len(first) + 1] not in _QUANTIFIERS
    )


def literal_first(pattern: str) -> str:
    """``pattern`` rewritten so that ``re`` can skip the positions where no match can start,
    matching the same spans: :func:`letter_first`'s, with each top-level alternative's leading
    group spread into alternatives of its own (``(?:degrad|fail)\\w* at once`` as
    ``degrad\\w* at once|fail\\w* at once``) when that makes every alternative start with a
    literal character (``re`` skips ahead only then, see the module's doc), and those
    alternatives gathered by their first character (:func:`_by_first_character`). Where that
    cannot be, a leading group's words are gathered by their first character inside it
    (``\\b(?:restart|redeploy|scale)\\b`` as ``\\b(?:r(?:estart|edeploy)|scale)\\b``): ``re``
    still stops at every word start, and compares there a first letter per letter, not a word
    per word."""
    spread = _literal_alternatives(pattern)
    if spread is not None:
        return _by_first_character(spread)
    return letter_first("|".join(map(_gathered, _alternatives(pattern))))


def _gathered(alternative: str) -> str:
    """``alternative`` with the words of its leading group gathered by their first character
    when they all start with a literal one; as it is otherwise."""
    group = _leading_group(alternative)
    if group is None:
        return alternative
    boundary, words, rest = group
    if len(words) < 2 or not all(_starts_with_literal(word) for word in words):
        return alternative
    return f"{boundary}(?:{_by_first_character(words)}){rest}"


def _leading_group(alternative: str) -> tuple[str, list[str], str] | None:
    """The parts of ``alternative`` that starts with a non-capturing group (after an optional
    ``\\b``): that boundary, the group's words and what follows its ")"; None when it does not
    start with one."""
    lead = _LEADING_GROUP.match(alternative)
    if lead is None:
        return None
    # The group's own ")" is the first at the depth of its "(" (the top level) after it.
    opening = lead.end() - 3
    closing = (i for i, token, depth in _tokens(alternative) if token == ")" and not depth)
    close = next((i for i in closing if i > opening), None)
    if close is None:
        return None
    words = _alternatives(alternative[lead.end() : close])
    return lead.group(1) or "", words, alternative[close + 1 :]


def _spread_all(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern``, each leading group spread (:func:`_spread`)."""
    return [spread for alternative in _alternatives(pattern) for spread in _spread(alternative)]


def _literal_alternatives(pattern: str) -> list[str] | None:
    """``pattern``'s alternatives, groups spread and letters first, if all then start with a
    literal character; else None."""
    spread = _alternatives(letter_first("|".join(_spread_all(pattern))))
    return spread if all(_starts_with_literal(a) for a in spread) else None


def _by_first_character(alternatives: list[str]) -> str:
    """``alternatives`` (each starting with a literal character) as one alternative per first
    character: ``re`` tries a top-level alternative's first character at every position it
    stops at, so sixty alternatives cost sixty comparisons there and twenty first characters
    twenty. The same spans: alternatives with different first characters never match at the
    same position, and those with the same one keep their order."""
    rests: dict[str, list[str]] = {}
    for alternative in alternatives:
        first = _first_token(alternative)
        rests.setdefault(first, []).append(alternative[len(first) :])
    return "|".join(
        first + (f"(?:{'|'.join(rest)})" if len(rest) > 1 else rest[0])
        for first, rest in rests.items()
    )


def compile_folded(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A case-insensitive ``pattern`` compiled to match :func:`fold`-ed text (``flags`` without
    ``re.IGNORECASE``): the same spans, found about twice as fast on long texts."""
    return re.compile(literal_first(fold_pattern(pattern)), flags)


Search = Callable[[str], "re.Match[str] | None"]


@dataclass(frozen=True)
class Presence:
    """Whether a case-insensitive pattern matches :func:`fold`-ed text anywhere (not where: the
    keyword signals ask no more): ``search(text)`` finds a match, or ``at_line_start(text)``.

    Alternatives that start at a line start (``^``, multiline: "hi ...", "ok ...", "show ...")
    are looked for at the text's start and after each newline, apart from the rest, when the
    rest then starts with literals only (:func:`literal_first`): one of them alone keeps ``re``
    from skipping any position of the whole pattern. The same answer: a pattern matches
    somewhere exactly when one of its alternatives does, and a line starts at the text's start
    or after a newline. ``at_line_start`` is None when nothing is looked for apart."""

    search: Search
    at_line_start: Callable[[str], bool] | None = None

    @classmethod
    def of(cls, pattern: str, flags: int = 0) -> Presence:
        """The presence of case-insensitive ``pattern``, compiled with ``flags``."""
        alternatives = _spread_all(fold_pattern(pattern))
        line_starts = "|".join(a[1:] for a in alternatives if a.startswith("^"))
        rest = _literal_alternatives("|".join(a for a in alternatives if not a.startswith("^")))
        if not (line_starts and rest and flags & re.MULTILINE):
            return cls(compile_folded(pattern, flags).search)
        first_line = re.compile(line_starts, flags).match
        after_newline = re.compile(f"\n(?:{line_starts})", flags).search

        def at_line_start(folded: str) -> bool:
            return first_line(folded) is not None or after_newline(folded) is not None

        return cls(re.compile(_by_first_character(rest), flags).search, at_line_start)

    def __call__(self, folded: str) -> bool:
        """Whether the pattern matches ``folded`` anywhere."""
        if self.search(folded) is not None:
            return True
        return self.at_line_start is not None and self.at_line_start(folded)


@dataclass(frozen=True)
class SplitText:
    """A message cut into prose and fenced blocks."""

    prose: str
    blocks: tuple[str, ...]

    @property
    def code_lines(self) -> int:
        """Lines inside fenced blocks."""
        return sum(block.count("\n") + 1 for block in self.blocks if block.strip())

    def looks_like_code(self) -> bool:
        """Whether the pasted blocks read more like source/config than like logs or output."""
        code = sum(len(_CODE_LINE.findall(block)) for block in self.blocks)
        logs = sum(len(_LOG_LINE.findall(block)) for block in self.blocks)
        return code > 0 and code >= logs

    def looks_like_logs(self) -> bool:
        """Whether the pasted blocks read like logs, events or command output."""
        logs = sum(len(_LOG_LINE.findall(block)) for block in self.blocks)
        return logs > 0 and not self.looks_like_code()


def split_text(text: str) -> SplitText:
    """Separate fenced blocks from the prose around them."""
    blocks = tuple(m.group(1) for m in _FENCE.finditer(text))
    prose = _FENCE.sub(" ", text) if blocks else text
    return SplitText(prose=prose, blocks=blocks)


class TextMemo:
    """The results of pure functions of a text, each computed once while one request is decided.

    ``memo(fn, text)`` is ``fn(text)``, computed on the first call for that function and that
    string object and returned again after (``bounded`` returns a short message itself, so the
    router's windows of it, its split and its signals are one object each, whoever asks). Made
    per decision and dropped with it: the texts it holds (to keep their ids from being reused)
    outlive no decision.
    """

    def __init__(self) -> None:
        self._done: dict[tuple[Callable[[str], Any], int], tuple[str, Any]] = {}

    def __call__(self, fn: Callable[[str], _T], text: str) -> _T:
        key = (fn, id(text))
        done = self._done.get(key)
        if done is None:
            done = (text, fn(text))
            self._done[key] = done
        return cast("_T", done[1])
