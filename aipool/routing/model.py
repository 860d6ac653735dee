"""The learned intent model: a linear classifier over :mod:`aipool.routing.features`.

Inference is plain Python (one float32 row of weights per feature, ``bytes.join`` and ``sum``): a
worker imports no numpy and no training stack for it, and a decision costs a dictionary look-up
per feature, one row gathered per present feature and one C-level sum per intent and level. Training lives in :mod:`aipool.routing.train` (numpy, offline).

The model file is JSON (``FORMAT``)::

    {"format": "aipool-intent-model/1", "labels": ["ALERT_TRIAGE", ...],
     "vocabulary": ["c:ab", ...], "weights": "<base64 float32, vocabulary x labels, row-major>",
     "bias": [...], "threshold": 0.5, "trained": {"examples": 914, "sources": [...], ...},
     "complexity": {"labels": [1, 2, 3, 4, 5], "weights": "<base64 float32, vocabulary x 5>",
                    "bias": [...], "threshold": 0.5}}

Scores are softmax probabilities of ``bias + (sum of the present features' weights) / sqrt(n)``:
features are binary, the row normalised to unit length as in training. The present features'
weights are summed in vocabulary order, so every process adds the same floats in the same order
and gets the same probabilities to the last bit (summed in the order of a set of names, as before
#44, they hung on the process's string hashing seed, by rounding only).

The ``complexity`` head (optional: a file without it leaves complexity to the keyword scorer)
reads the same features plus the text's shape (its length bucket and script,
:func:`~aipool.routing.features.shape_features`, which the intent head never reads) and the
scorer's points (:func:`~aipool.routing.features.point_features`) and gives each level's probability (:meth:`IntentModel.level_shares`); the router reads them where
a level moves the tier (:func:`~aipool.routing.router.choose_complexity`). The head's
``threshold`` is part of the file format and read by nothing since.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache, partial
from operator import is_not
from pathlib import Path
from typing import Any, cast

from aipool.routing.features import Reading, parts, point_features, read, shape_features
from aipool.routing.intent import Intent
from aipool.settings import settings

FORMAT = "aipool-intent-model/1"
#: Keeps a feature's vocabulary id, drops the None of a feature the model never saw.
_KNOWN = partial(is_not, None)
LEVELS = (1, 2, 3, 4, 5)
SHIPPED_MODEL = Path(__file__).with_name("intent_model.json")


class ModelError(ValueError):
    """A model file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Prediction:
    """The model's answer: the intent, its probability, and every intent's probability."""

    intent: str
    confidence: float
    probabilities: dict[str, float]


@dataclass(frozen=True)
class LevelGuess:
    """The complexity head's answer: the level and its probability."""

    level: int
    confidence: float


def _softmax(bias: tuple[float, ...], sums: list[float], count: int) -> list[float]:
    """Softmax of ``bias + sum / sqrt(count)``, one per class (``count`` features present)."""
    norm = 1.0 / math.sqrt(count) if count else 0.0
    scores = [b + total * norm for b, total in zip(bias, sums, strict=True)]
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _rows(columns: list[array[float]]) -> list[bytes]:
    """Per feature, its weight in each of ``columns`` (equally long) as one float32 row."""
    width = len(columns)
    flat = array("f", bytes(4 * width * len(columns[0])))
    for c, column in enumerate(columns):
        flat[c::width] = column
    raw = flat.tobytes()
    size = 4 * width
    return [raw[i : i + size] for i in range(0, len(raw), size)]


def _column_sums(
    weights: memoryview[float], width: int, columns: range, before: list[float] | None = None
) -> list[float]:
    """The sum of each of ``columns`` over the rows of ``weights`` (``width`` floats a row),
    added in row order after ``before``'s sums: each is one C-level sum over a strided view,
    the same floats added in the same order as one feature at a time."""
    if before is None:
        return [sum(weights[c::width]) for c in columns]
    return [sum(weights[c::width], start) for c, start in zip(columns, before, strict=True)]


@dataclass(frozen=True)
class _Features:
    """What the model read of a text: the key of the text it read (its length and hash, no
    text), its features' vocabulary ids in vocabulary order, its shape's, and the ids' rows."""

    key: tuple[int, int]
    ids: tuple[int, ...]
    shape: tuple[int, ...]
    weights: memoryview[float]


class IntentModel:
    """A loaded model: ``predict(text)``, ``level(text, points)`` when it has a complexity head,
    and, for people, ``top_features(text, intent)``."""

    def __init__(
        self,
        labels: list[str],
        vocabulary: list[str],
        weights: array[float],
        bias: list[float],
        threshold: float,
        trained: dict[str, Any],
        source: str,
        levels: tuple[array[float], list[float], float] | None = None,
    ) -> None:
        self.labels = tuple(labels)
        n = len(labels)
        columns = [array("f", weights[c::n]) for c in range(n)]
        self.bias = tuple(bias)
        self.threshold = threshold
        self.trained = trained
        self.source = source
        # The n-grams, words and word pairs by their names without the kind's prefix, as
        # features.parts gives them: no prefixed string is built per n-gram of every decision.
        self._by_kind: dict[str, dict[str, int]] = {kind: {} for kind in ("c:", "w:", "b:")}
        index = {name: i for i, name in enumerate(vocabulary)}
        for name, i in index.items():
            table = self._by_kind.get(name[:2])
            if table is not None:
                table[name[2:]] = i
        #: The ids of the features named in full (rule signals, facts, shape, points); the
        #: n-grams, words and pairs are in ``_by_kind`` alone, so a worker keeps each name once.
        self.index = {name: i for name, i in index.items() if name[:2] not in self._by_kind}
        self._size = len(vocabulary)
        self._last: _Features | None = None
        self.level_bias: tuple[float, ...] = ()
        if levels is not None:
            k = len(LEVELS)
            columns += [array("f", levels[0][c::k]) for c in range(k)]
            self.level_bias = tuple(levels[1])
        # A feature's weights for every intent and level side by side (one row), rather than a
        # column per class: a decision gathers one row per present feature instead of reading
        # eleven columns at scattered places, and sums each class over the gathered rows.
        self._rows = _rows(columns)
        self._width = len(columns)

    @property
    def has_levels(self) -> bool:
        """Whether the file carries a complexity head."""
        return bool(self.level_bias)

    @cached_property
    def vocabulary(self) -> list[str]:
        """Every feature's name by its id (for people and tests; decisions look names up by
        kind)."""
        names = [""] * self._size
        for kind, table in self._by_kind.items():
            for key, i in table.items():
                names[i] = kind + key
        for name, i in self.index.items():
            names[i] = name
        return names

    @cached_property
    def columns(self) -> tuple[array[float], ...]:
        """Each intent's weight per feature (for people and tests; decisions read the rows)."""
        return self._columns(range(len(self.labels)))

    @cached_property
    def level_columns(self) -> tuple[array[float], ...]:
        """Each complexity level's weight per feature (empty without a complexity head)."""
        return self._columns(range(len(self.labels), self._width))

    def _columns(self, classes: range) -> tuple[array[float], ...]:
        flat = self._weights(range(len(self._rows)))
        return tuple(array("f", flat[c :: self._width]) for c in classes)

    def _weights(self, ids: Iterable[int]) -> memoryview[float]:
        """The rows of ``ids``, in their order, as one float32 view."""
        return memoryview(b"".join(map(self._rows.__getitem__, ids))).cast("f")

    def _ids(self, text: str, reading: Reading | None = None) -> tuple[int, ...]:
        """The vocabulary ids of ``text``'s features, as both heads read them."""
        return self._read(text, reading).ids

    def _read(self, text: str, reading: Reading | None = None) -> _Features:
        # The router asks for the intent and then the level of the same text: the features of
        # the last text are kept, keyed by its length and hash rather than the text, so no prompt
        # outlives its decision here (swapped whole: threads at worst compute twice).
        key = (len(text), hash(text))
        last = self._last
        if last is not None and last.key == key:
            return last
        reading = reading if reading is not None else read(text)
        find = self.index.get
        grams, words, pairs, rest = parts(text, reading)
        # A long text repeats its n-grams: each distinct one is looked up once.
        found = set(map(self._by_kind["c:"].get, set(grams)))
        found.update(map(self._by_kind["w:"].get, words))
        found.update(map(self._by_kind["b:"].get, pairs))
        found.update(map(find, rest))
        found.discard(None)
        # In vocabulary order: the sums (and so the probabilities, to their last bit) are the
        # same in every process, whatever its string hashing seed.
        ids = cast("tuple[int, ...]", tuple(sorted(cast("set[int]", found))))
        shape = cast("tuple[int, ...]", tuple(filter(_KNOWN, map(find, shape_features(reading)))))
        self._last = _Features(key, ids, shape, self._weights(ids))
        return self._last

    def predict(self, text: str, reading: Reading | None = None) -> Prediction:
        """The most probable intent of ``text`` and the probability of each (``reading``:
        :func:`~aipool.routing.features.read` of ``text``, when the caller has it)."""
        found = self._read(text, reading)
        sums = _column_sums(found.weights, self._width, range(len(self.labels)))
        shares = _softmax(self.bias, sums, len(found.ids))
        probabilities = dict(zip(self.labels, shares, strict=True))
        best = max(probabilities, key=probabilities.__getitem__)
        return Prediction(best, probabilities[best], probabilities)

    def level_shares(
        self, text: str, points: int, reading: Reading | None = None
    ) -> list[float] | None:
        """The probability of each level of :data:`LEVELS` for ``text`` whose keyword score is
        ``points`` (None without a complexity head)."""
        if not self.has_levels:
            return None
        index = self.index
        found = self._read(text, reading)
        # The text's features, then its shape and the scorer's points, summed in that order.
        more = [*found.shape, *(index[f] for f in point_features(points) if f in index)]
        levels = range(len(self.labels), self._width)
        sums = _column_sums(
            self._weights(more),
            self._width,
            levels,
            _column_sums(found.weights, self._width, levels),
        )
        return _softmax(self.level_bias, sums, len(found.ids) + len(more))

    def level(self, text: str, points: int, reading: Reading | None = None) -> LevelGuess | None:
        """The most probable complexity level of ``text`` whose keyword score is ``points``, and
        its probability (None without a complexity head)."""
        shares = self.level_shares(text, points, reading)
        if shares is None:
            return None
        best = shares.index(max(shares))
        return LevelGuess(LEVELS[best], shares[best])

    def top_features(self, text: str, intent: str, n: int = 6) -> list[tuple[str, float]]:
        """The ``n`` features of ``text`` that pushed hardest toward ``intent`` against the other
        intents' average, with their weight. Feature names hold text: for a terminal only."""
        c = self.labels.index(intent)
        others = [col for i, col in enumerate(self.columns) if i != c]
        pushes: dict[str, float] = {}
        for i in self._ids(text):
            rest = sum(col[i] for col in others) / len(others)
            # A signal entered several times ("s:x", "s2:x") is one feature to a person.
            kind, _, value = self.vocabulary[i].partition(":")
            name = f"{kind.rstrip('0123456789')}:{value}"
            pushes[name] = pushes.get(name, 0.0) + self.columns[c][i] - rest
        ranked = sorted(pushes.items(), key=lambda item: -item[1])
        return [item for item in ranked[:n] if item[1] > 0]


def parse_model(data: Any, source: str) -> IntentModel:
    """Build a model from a parsed model file; :class:`ModelError` naming ``source`` if malformed."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ModelError(f"{source}: not an intent model (format must be {FORMAT!r})")
    try:
        labels = [str(x) for x in data["labels"]]
        vocabulary = [str(x) for x in data["vocabulary"]]
        weights = _floats(data["weights"])
        bias = [float(x) for x in data["bias"]]
        threshold = float(data["threshold"])
        trained = dict(data.get("trained") or {})
        levels = _levels(data.get("complexity"), len(vocabulary), source)
    except ModelError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{source}: malformed model file ({type(exc).__name__}: {exc})") from None

    unknown = sorted(set(labels) - {i.value for i in Intent})
    if unknown or len(set(labels)) != len(labels) or len(labels) < 2:
        raise ModelError(f"{source}: labels must be distinct intents, got {labels}")
    if len(weights) != len(vocabulary) * len(labels) or len(bias) != len(labels):
        raise ModelError(
            f"{source}: {len(weights)} weights for {len(vocabulary)} features x {len(labels)} labels"
        )
    if not all(math.isfinite(w) for w in weights) or not 0.0 <= threshold <= 1.0:
        raise ModelError(f"{source}: weights must be finite and the threshold within 0..1")
    return IntentModel(labels, vocabulary, weights, bias, threshold, trained, source, levels)


def _floats(encoded: Any) -> array[float]:
    """Base64 little-endian float32s (how the trainer writes weights) as an array."""
    weights = array("f")
    weights.frombytes(base64.b64decode(encoded, validate=True))
    if sys.byteorder != "little":
        weights.byteswap()
    return weights


def _levels(
    head: Any, features_count: int, source: str
) -> tuple[array[float], list[float], float] | None:
    """The complexity head's weights and bias, checked; None when the file has none."""
    if head is None:
        return None
    if not isinstance(head, dict) or [int(x) for x in head["labels"]] != list(LEVELS):
        raise ModelError(f"{source}: the complexity head's labels must be {list(LEVELS)}")
    weights = _floats(head["weights"])
    bias = [float(x) for x in head["bias"]]
    threshold = float(head["threshold"])
    if len(weights) != features_count * len(LEVELS) or len(bias) != len(LEVELS):
        raise ModelError(
            f"{source}: {len(weights)} complexity weights for {features_count} features x "
            f"{len(LEVELS)} levels"
        )
    if not all(math.isfinite(w) for w in weights) or not 0.0 <= threshold <= 1.0:
        raise ModelError(
            f"{source}: complexity weights must be finite and the threshold within 0..1"
        )
    return weights, bias, threshold


def read_model(path: str | os.PathLike[str]) -> IntentModel:
    """Load the model file at ``path``; :class:`ModelError` with the path if it cannot be used."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read the model file ({exc.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: not JSON ({exc})") from None
    return parse_model(data, str(path))


@lru_cache(maxsize=4)
def _cached(path: str, mtime_ns: int) -> IntentModel:
    # ``mtime_ns`` is only part of the key: a replaced file is read again.
    return read_model(path)


def model_path() -> Path:
    """The model in force: ``AIPOOL_ROUTING_MODEL_FILE`` if set, else the packaged model."""

    return settings().routing_model_file or SHIPPED_MODEL


def load_model(path: str | os.PathLike[str] | None = None) -> IntentModel:
    """The model at ``path`` (default :func:`model_path`), loaded once per file version."""
    target = Path(path) if path is not None else model_path()
    try:
        mtime = target.stat().st_mtime_ns
    except OSError as exc:
        raise ModelError(f"{target}: cannot read the model file ({exc.strerror})") from None
    return _cached(str(target), mtime)
