"""Splitting a message into the prose a user wrote and the code or logs they pasted.

Both the intent classifier and the complexity scorer need this split: the *ask* lives in the prose
(``restart`` inside a pasted ``kubectl`` command is not a request to restart anything), while the
pasted blocks are evidence of their own (a diff to review, a log to read).
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
