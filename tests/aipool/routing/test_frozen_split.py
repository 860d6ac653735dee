"""The router judged on the frozen test split: 500 requests written blind (the eleventh test set,
labelled by the guide's boundary rules; the first ten were read once each and are training data
since, docs/routing.md).

The split's figures were read once, after every choice had been made on train and dev. Issue #22's
targets are met there (intent >= 95 %, macro-F1 >= 0.93, each language >= 93 %, complexity within
one level >= 90 %), and #28's: tier 97.0 % (>= 95 %), complex -> local 2 of 68 (2.9 %, <= 3 %),
simple -> cloud 2 of 335 (0.6 %, <= 2 %). These bounds are the figures as measured, rounded
toward failing less: a change that routes worse on requests it never saw fails this test.
Raising a bound needs a better router, not a change to the split (its hash is checked in
test_corpus.py).
"""

from __future__ import annotations

from aipool.routing import corpus
from aipool.routing.evaluate import evaluate, read_labelled

# Measured on the frozen split (the commit that froze it, read once), rounded down / up.
INTENT_FLOOR = 0.98  # 98.0 %
MACRO_F1_FLOOR = 0.98  # 0.980
LANGUAGE_FLOOR = 0.97  # en 97.2 %, mixed 97.5 %, zh 99.4 %
COMPLEXITY_WITHIN_ONE_FLOOR = 0.996  # 99.6 %
TIER_FLOOR = 0.97  # 97.0 %
COMPLEX_TO_LOCAL_CEILING = 0.0295  # 2.9 %: 2 of 68
SIMPLE_TO_CLOUD_CEILING = 0.006  # 0.6 %: 2 of 335


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
