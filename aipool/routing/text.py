"""Splitting a message into the prose a user wrote and the code or logs they pasted.

Both the intent classifier and the complexity scorer need this split: the *ask* lives in the prose
(``restart`` inside a pasted ``kubectl`` command is not a request to restart anything), while the
pasted blocks are evidence of their own (a diff to review, a log to read).

Two helpers keep routing cheap whatever a producer pastes:

* :func:`bounded` keeps the head and the tail of a long message. What a user asks sits around a
  paste, at its start or its end; the middle of a 100 KB log says nothing the first and last few
  kilobytes do not, and every regular expression costs time per character it reads.
* :func:`fold` and :func:`fold_pattern` trade case-insensitive matching for matching folded text
  against folded patterns: Python's ``re`` compares each character case-insensitively at every
  position it tries, which costs about twice a plain comparison.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


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
    """``text`` with ASCII letters lowercased, one character for one, so match offsets still
    point into ``text``. Other letters may be lowercased too; patterns never name them."""
    folded = text.lower()
    # A few characters lowercase to two (U+0130); then fold ASCII only, keeping the offsets.
    return folded if len(folded) == len(text) else text.translate(_ASCII_LOWER)


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
