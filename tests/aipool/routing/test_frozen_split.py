"""The router judged on the frozen test split (replaces the 90 % test on the old labelled set,
which was the set the keyword rules had been tuned on).

The split's figures were read once, after every choice had been made on train and dev
(``docs/routing.md``, "The figures"). Issue #22 and #28 ask for intent ≥ 95 %, macro-F1 ≥ 0.93,
tier ≥ 95 %; the router does not reach those here, and these floors are the figures as measured,
rounded down: a change that makes routing worse on requests it never saw fails this test. Raising a
floor needs a better router, not a change to the split (its hash is checked in test_corpus.py).
"""

from __future__ import annotations

from aipool.routing import corpus
from aipool.routing.evaluate import evaluate, read_labelled

# Measured on the frozen split (commit "aipool route eval / train ..."), rounded down.
INTENT_FLOOR = 0.85
MACRO_F1_FLOOR = 0.86
LANGUAGE_FLOOR = 0.79
COMPLEXITY_WITHIN_ONE_FLOOR = 0.95
TIER_FLOOR = 0.86
# These two are #28's own targets, met.
COMPLEX_TO_LOCAL_CEILING = 0.03
SIMPLE_TO_CLOUD_CEILING = 0.02


def test_router_on_the_frozen_test_split() -> None:
    # Given the frozen test split
    rows = read_labelled(corpus.path("test"))
    # When every request is routed as a worker would route it
    result = evaluate(rows)
    report = (
        f"intent {result.intent_accuracy:.3f} macro-F1 {result.macro_f1:.3f} "
        f"within-one {result.complexity_within_one:.3f} tier {result.tier_accuracy:.3f} "
        f"complex->local {result.complex_to_local:.3f} simple->cloud {result.simple_to_cloud:.3f} "
        f"by language { ({k: round(sum(v) / len(v), 3) for k, v in result.by_lang.items()}) }"
    )
    # Then no figure falls below what was measured when the split was first read
    assert result.intent_accuracy >= INTENT_FLOOR, report
    assert result.macro_f1 >= MACRO_F1_FLOOR, report
    assert all(sum(v) / len(v) >= LANGUAGE_FLOOR for v in result.by_lang.values()), report
    assert result.complexity_within_one >= COMPLEXITY_WITHIN_ONE_FLOOR, report
    assert result.tier_accuracy >= TIER_FLOOR, report
    assert result.complex_to_local <= COMPLEX_TO_LOCAL_CEILING, report
    assert result.simple_to_cloud <= SIMPLE_TO_CLOUD_CEILING, report
