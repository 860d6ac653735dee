"""What the intent model reads of a text: character and word n-grams, the keyword rules' signals,
and a few facts about pasted blocks.

Pure Python and deterministic (no hashing salt, no numpy), so a worker pays no import for it and the
same text gives the same features in every process. A long text is read by its first
``HEAD_CHARS`` and last ``TAIL_CHARS`` characters (:func:`aipool.routing.text.bounded`): the ask sits
around a paste, and a 100 KB paste then costs what two kilobytes do.

Feature names (the model's vocabulary; ``aipool route`` shows the ones that weighed most):

=================  ===========================================================================
``c:xy``           a character bigram or trigram of the folded text, spaces squeezed
``w:word``         a word (ASCII word or one CJK character)
``b:w1 w2``        two consecutive words
``s:<label>``      a keyword rule of :mod:`aipool.routing.intent` that matched (its label)
``m:<fact>``       a fact: ``code-block``, ``log-block``, ``json``, ``diff``, ``question``
``m:len<n>``       the text's length bucket, and ``m:cjk`` (has Chinese) or ``m:latin``: its
                   *shape* (:func:`shape_features`), read by the complexity head only
=================  ===========================================================================

Why shape is kept from the intent head: every request has exactly one length bucket and one
script, so to the intent head they are a prior by length and language, entered as often as a rule
signal. Requests to operate are mostly short (``restart the api``, ``幫我重啟``), and that prior
alone carried a short plain sentence with no ask in it to ``TOOL_CALL`` ("A normal question after
the broken ones", issue #40), a chain that ends in a refusal. What a request asks for is in its
words; how much work it is depends on its length too.
"""

from __future__ import annotations

import itertools
import re

from aipool.routing.intent import signal_labels
from aipool.routing.text import SplitText, TextMemo, bounded, fold, split_text

HEAD_CHARS = 1536
TAIL_CHARS = 512
_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[a-z][a-z0-9_']*|[0-9]+|[\u3400-\u9fff]")
_CJK = re.compile(r"[\u3400-\u9fff]")
_LENGTH_BUCKETS = (16, 48, 128, 400, 1200)
SIGNAL_COPIES = 3


def _length_bucket(n: int) -> str:
    for i, edge in enumerate(_LENGTH_BUCKETS):
        if n < edge:
            return f"len{i}"
    return f"len{len(_LENGTH_BUCKETS)}"


Reading = tuple[str, SplitText, tuple[str, ...]]


def model_window(text: str) -> str:
    """The part of ``text`` the model reads: its first ``HEAD_CHARS`` and last ``TAIL_CHARS``."""
    return bounded(text, HEAD_CHARS, TAIL_CHARS)


def read(text: str, memo: TextMemo | None = None) -> Reading:
    """The part of ``text`` the model reads, split into prose and blocks, and the keyword
    signals of its prose: computed once per decision, and handed to :func:`features` and to the
    router's explanation alike (``memo``: the decision's, shared with the keyword rules and the
    complexity score, which read the same split and signals of a short message)."""
    memo = memo if memo is not None else TextMemo()
    read_window = memo(model_window, text)
    split = memo(split_text, read_window)
    return read_window, split, tuple(signal_labels(split.prose, memo))


#: A text's features by kind: character n-grams, words and word pairs named without their kind's
#: prefix (``c:``, ``w:``, ``b:``), then the rule signals and facts with their full names.
Parts = tuple[list[str], list[str], list[str], set[str]]


def parts(text: str, reading: Reading | None = None) -> Parts:
    """The features of ``text`` by kind (:data:`Parts`): what :func:`features` names, without
    building a prefixed name per n-gram (the model looks each kind up in its own table)."""
    text, split, labels = reading if reading is not None else read(text)
    folded = _SPACES.sub(" ", fold(text)).strip()
    padded = f" {folded} "
    # Bigrams and trigrams: slicing in comprehensions keeps this in C-speed loops.
    grams = [padded[i : i + 2] for i in range(len(padded) - 1)]
    grams += [padded[i : i + 3] for i in range(len(padded) - 2)]
    words = _WORD.findall(folded)
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(words)]
    facts: list[str] = []
    if split.blocks:
        facts.append("code-block" if split.looks_like_code() else "log-block")
    if folded.startswith("{") or '{"' in folded:
        facts.append("json")
    if "\n@@ " in text or "\n+++ " in text:
        facts.append("diff")
    if "?" in split.prose or "？" in split.prose:
        facts.append("question")
    rest: set[str] = set()
    # Rule signals and facts are few among hundreds of n-grams; each is entered SIGNAL_COPIES
    # times (``s:label``, ``s2:label``...) so that, in a unit-length row, they weigh what a
    # keyword the rules were built on should.
    for copy in range(SIGNAL_COPIES):
        tag = "" if copy == 0 else str(copy + 1)
        rest.update(f"s{tag}:{label}" for label in labels)
        rest.update(f"m{tag}:{fact}" for fact in facts)
    return grams, words, pairs, rest


def features(text: str, reading: Reading | None = None) -> set[str]:
    """The feature names present in ``text`` (a set: presence, not counts); ``reading`` is
    ``read(text)`` when the caller has it already."""
    grams, words, pairs, rest = parts(text, reading)
    out = {"c:" + gram for gram in grams}
    out.update("w:" + word for word in words)
    out.update("b:" + pair for pair in pairs)
    out.update(rest)
    return out


def shape_features(reading: Reading) -> list[str]:
    """The length bucket and the script of the text ``reading`` read (``m:len2``, ``m:latin``,
    each entered as often as a rule signal): features of the complexity head only, never of the
    intent head (the module's doc says why)."""
    window = reading[0]
    facts = (_length_bucket(len(window)), "cjk" if _CJK.search(window) else "latin")
    return [
        f"m{'' if copy == 0 else copy + 1}:{fact}"
        for copy in range(SIGNAL_COPIES)
        for fact in facts
    ]


def point_features(points: int) -> list[str]:
    """The keyword scorer's complexity points as features of the complexity head (``p:3``,
    ``p2:3``...), entered as often as a rule signal: what the rules counted (length, pastes,
    services to correlate) weighs beside the n-grams."""
    return [f"p{'' if copy == 0 else copy + 1}:{points}" for copy in range(SIGNAL_COPIES)]
