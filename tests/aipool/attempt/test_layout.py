"""The two sides of the script agree: every reply attempt.lua can give is read by layout.py, and
the table of the lifecycle is the same in the code and in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import aipool.attempt.lifecycle as lifecycle
from aipool.attempt.layout import read_reply

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "aipool" / "attempt" / "attempt.lua"
#: A reply of each kind, as the script builds it, with its fields.
SAMPLES = {
    "call": ["1.5", "[]", "3", "", "30.000000", "61.500000"],
    "answered": ["1.5", "[]"],
    "busy": ["1.5", "[]", "61.5"],
    "ended": [
        "1.5",
        '[["closed","open",3,"1.500000"],["open","half_open",3]]',
        "failed",
        "timeout",
        '["timeout: x"]',
        "static",
        '[["claude","deadline","9.0"]]',
    ],
    "done": ["1.5", "[]", "failed", "timeout", "[]", "static", "[]"],
    "next": ["1.5", "[]", "gemini", "[]", "1.5"],
    "missing": ["1.5", "[]"],
    "foreign": ["1.5", "[]"],
    "clock": ["1.5", "[]"],
    "config": ["1.5", "[]"],
    "swept": ["1.5", "[]", 4],
}


def test_every_reply_kind_the_script_gives_is_read() -> None:
    # Given the kinds of reply the script returns
    kinds = set(re.findall(r"return \{'(\w+)', NOW", SCRIPT.read_text(encoding="utf-8")))
    # Then each has a sample here, and layout.py reads it
    assert kinds == set(SAMPLES)
    for kind, rest in SAMPLES.items():
        reply, events = read_reply([kind.encode(), *rest])
        assert reply is not None
    ended, events = read_reply([b"ended", *SAMPLES["ended"]])
    assert events == [("closed", "open", 3, 1.5), ("open", "half_open", 3, None)]
    assert ended.decision.next == "static"
    assert ended.decision.passed[0].provider == "claude"


def test_the_lifecycle_table_in_docs_is_the_one_in_the_code() -> None:
    doc = (ROOT / "docs" / "attempts.md").read_text(encoding="utf-8")
    code = lifecycle.__doc__ or ""
    table = code[code.index("States (a hash") :].replace("\\\\", "\\")
    assert table.strip() in doc
