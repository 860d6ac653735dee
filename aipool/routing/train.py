"""Training the intent model, offline: ``python -m aipool.routing.train`` (or ``aipool route train``).

Multinomial logistic regression over the binary features of :mod:`aipool.routing.features`, each
row scaled to unit length, with L2 regularisation and classes weighted to equal total weight;
full-batch Adam in numpy. No scikit-learn: a few hundred lines of numpy train a thousand requests in
seconds, and the file it writes is read back without numpy (:mod:`aipool.routing.model`).

The vocabulary is every feature seen in at least ``MIN_COUNT`` training requests, so a stray
n-gram of one paste does not become a weight. The shipped model is trained on the corpus's train
and dev splits with the settings and the threshold chosen on dev by a model trained on train alone
(``--select``); the test split is never read here.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aipool.contract.request import Message, Request
from aipool.routing import corpus
from aipool.routing.complexity import score
from aipool.routing.features import features, point_features, read, shape_features
from aipool.routing.intent import Intent, classify_text
from aipool.routing.model import FORMAT, LEVELS, SHIPPED_MODEL, IntentModel, parse_model

LABELS = [i.value for i in Intent]
#: Chosen on dev (round 9, models trained on train alone): 3 keeps 35,593 features against 2's
#: 54,034, a 2.5 MB model against 3.8 MB (every worker holds it), at the same dev figures (intent
#: 97.7 against 97.8 %, tier 95.8 against 95.7 %).
MIN_COUNT = 3
L2 = 1e-5
EPOCHS = 300
LEARNING_RATE = 0.05
#: Below this probability the router does not take the model's word (chosen on dev: --select).
THRESHOLD = 0.5
#: The complexity head's ``threshold`` the file format asks for; the router reads the head's
#: probabilities against its own shares (router.COMPLEX_SHARE, MEDIUM_SHARE) instead.
LEVEL_THRESHOLD = 0.5


@dataclass(frozen=True)
class Example:
    """A text, its intent label and, when labelled, its complexity (1-5)."""

    text: str
    intent: str
    complexity: int | None = None


def examples_from_rows(rows: Iterable[dict[str, Any]]) -> list[Example]:
    """Corpus rows (``text``, ``intent``, optional ``complexity``) as examples; rows whose request
    carries tools are left out: the tools rule decides those, whatever the text says."""
    return [
        Example(r["text"], r["intent"], r.get("complexity")) for r in rows if not r.get("tools")
    ]


def _points(text: str) -> int:
    """The keyword scorer's complexity of ``text`` sent as a prompt: the complexity head's
    input beside the n-grams, as the router computes it."""
    # Built, not parsed: an operator's example is scored whatever the contract's size limits.
    return score(Request(messages=(Message(role="user", content=text),))).score


def _matrix(
    rows_features: Iterable[Iterable[str]], index: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR pieces (indices, row of each entry, value of each entry) of the unit-length rows."""
    indices: list[int] = []
    rows: list[int] = []
    values: list[float] = []
    for r, names in enumerate(rows_features):
        ids = sorted({index[f] for f in names if f in index})
        if not ids:
            continue
        value = 1.0 / np.sqrt(len(ids))
        indices.extend(ids)
        rows.extend([r] * len(ids))
        values.extend([value] * len(ids))
    return np.array(indices), np.array(rows), np.array(values)


def train(
    examples: list[Example],
    *,
    l2: float = L2,
    epochs: int = EPOCHS,
    threshold: float = THRESHOLD,
    trained: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fit the model on ``examples`` and return it as a model-file dictionary."""
    unknown = sorted({e.intent for e in examples} - set(LABELS))
    if unknown:
        raise ValueError(f"unknown intent label(s): {', '.join(unknown)}")
    # Each text's features, computed once for the vocabulary and both heads.
    readings = [read(e.text) for e in examples]
    found = [features(e.text, r) for e, r in zip(examples, readings, strict=True)]
    counts: Counter[str] = Counter()
    for names in found:
        counts.update(names)
    vocabulary = sorted(f for f, n in counts.items() if n >= MIN_COUNT)
    # The text's shape and the scorer's points are features of the complexity head only (the
    # intent head never sees them: their weights there stay 0).
    vocabulary += sorted({f for r in readings for f in shape_features(r)})
    vocabulary += [f for level in LEVELS for f in point_features(level)]
    index = {f: i for i, f in enumerate(vocabulary)}
    v = len(vocabulary)
    w, b = _fit(
        _matrix(found, index),
        [LABELS.index(e.intent) for e in examples],
        v, len(LABELS), l2=l2, epochs=epochs,
    )  # fmt: skip
    graded = [
        (e, [*names, *shape_features(r)])
        for e, names, r in zip(examples, found, readings, strict=True)
        if e.complexity is not None
    ]
    head: dict[str, Any] = {}
    if graded:
        lw, lb = _fit(
            _matrix(([*names, *point_features(_points(e.text))] for e, names in graded), index),
            [LEVELS.index(int(e.complexity or 0)) for e, _ in graded],
            v, len(LEVELS), l2=l2, epochs=epochs,
        )  # fmt: skip
        head = {"complexity": {
            "labels": list(LEVELS),
            "weights": base64.b64encode(lw.astype("<f4").tobytes()).decode("ascii"),
            "bias": [round(float(x), 6) for x in lb],
            "threshold": LEVEL_THRESHOLD,
        }}  # fmt: skip
    weights = w.astype("<f4").tobytes()
    return {
        "format": FORMAT,
        "labels": LABELS,
        "vocabulary": vocabulary,
        "weights": base64.b64encode(weights).decode("ascii"),
        "bias": [round(float(x), 6) for x in b],
        "threshold": threshold,
        "trained": {
            "examples": len(examples),
            "graded": len(graded),
            "features": v,
            "l2": l2,
            "epochs": epochs,
            **(trained or {}),
        },
        **head,
    }


def _fit(
    matrix: tuple[np.ndarray, np.ndarray, np.ndarray],
    labels: list[int],
    v: int,
    c: int,
    *,
    l2: float,
    epochs: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression by full-batch Adam: weights (v x c) and bias (c)."""
    cols, rows, vals = matrix
    n = len(labels)
    y = np.zeros((n, c))
    y[np.arange(n), labels] = 1.0
    # Each class weighs the same in total, however many examples it has.
    per_class = y.sum(axis=0)
    sample_weight = (y / np.maximum(per_class, 1.0)).sum(axis=1) * n / c
    w = np.zeros((v, c))
    b = np.zeros(c)
    moments = [np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for step in range(1, epochs + 1):
        z = _scatter_sum(rows, w, cols, vals, n)
        z += b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - y) * sample_weight[:, None] / n
        grad_w = _scatter_sum(cols, g, rows, vals, v)
        grad_w += l2 * w
        grad_b = g.sum(axis=0)
        for param, grad, m, s in (
            (w, grad_w, moments[0], moments[1]),
            (b, grad_b, moments[2], moments[3]),
        ):
            m *= beta1
            m += (1 - beta1) * grad
            s *= beta2
            s += (1 - beta2) * grad * grad
            param -= (
                LEARNING_RATE * (m / (1 - beta1**step)) / (np.sqrt(s / (1 - beta2**step)) + eps)
            )
    return w, b


def _scatter_sum(
    into: np.ndarray, source: np.ndarray, take: np.ndarray, vals: np.ndarray, size: int
) -> np.ndarray:
    """``out[into[i]] += source[take[i]] * vals[i]`` for every entry i, as ``np.add.at`` would
    (``size`` rows, one column per class). One ``bincount`` per class instead: both add in entry
    order in float64, so the result is the same to the bit, and about four times faster (the
    shipped corpus trained in 3 minutes with ``np.add.at``, past a CI test's limit)."""
    columns = np.ascontiguousarray(source.T)
    out = np.empty((size, source.shape[1]))
    for k, column in enumerate(columns):
        out[:, k] = np.bincount(into, weights=column[take] * vals, minlength=size)
    return out


def fit(examples: list[Example], **kwargs: Any) -> IntentModel:
    """Train and load in one step (for selection and tests)."""
    return parse_model(train(examples, **kwargs), "<trained in memory>")


def accuracy(model: IntentModel, examples: list[Example], threshold: float = 0.0) -> float:
    """Share of ``examples`` the model gets right when it is at least ``threshold`` sure; below
    it, the keyword rules decide (as in the router)."""

    right = 0
    for example in examples:
        guess = model.predict(example.text)
        got = guess.intent if guess.confidence >= threshold else classify_text(example.text).intent
        right += got == example.intent
    return right / len(examples)


def select() -> None:
    """Print dev accuracy for a grid of settings and thresholds, models trained on train only."""

    fit_rows, dev = examples_from_rows(corpus.load("train")), examples_from_rows(corpus.load("dev"))
    for l2 in (1e-5, 1e-4, 1e-3):
        for epochs in (150, 300):
            model = fit(fit_rows, l2=l2, epochs=epochs)
            cells = "  ".join(
                f"t={t:.2f}:{accuracy(model, dev, t):.3f}" for t in (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)
            )
            print(f"l2={l2:g} epochs={epochs}  {cells}")


def train_with(
    extra: list[dict[str, Any]], output: Path, *, source: str, epochs: int = EPOCHS
) -> dict[str, Any]:
    """Train on the shipped train and dev splits plus ``extra`` rows (``text``, ``intent``), with
    the shipped settings (``epochs`` aside), and write the model file to ``output``; return what
    was written."""

    rows = corpus.load("train") + corpus.load("dev") + extra
    model = train(
        examples_from_rows(rows),
        epochs=epochs,
        trained={"sources": ["corpus:train", "corpus:dev", *([source] if extra else [])]},
    )
    output.write_text(json.dumps(model, ensure_ascii=False, separators=(",", ":")) + "\n")
    return model


def main(argv: list[str] | None = None) -> int:
    """Train on the shipped train and dev splits (plus ``--examples``) and write the model file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=SHIPPED_MODEL)
    parser.add_argument("--select", action="store_true", help="print the dev-split grid and stop")
    args = parser.parse_args(argv)
    if args.select:
        select()
        return 0
    model = train_with([], args.output, source="")
    print(f"wrote {args.output}: {model['trained']['examples']} examples, "
          f"{model['trained']['features']} features", file=sys.stderr)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
