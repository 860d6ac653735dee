"""The shipped intent model: small, loaded without numpy, refused with its path when broken."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aipool.routing.features import features
from aipool.routing.model import SHIPPED_MODEL, ModelError, load_model, read_model

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_model_is_a_few_megabytes_at_most_and_loads() -> None:
    # Given the packaged model file (3.5 MB with round 11's 5,799 examples and 50,445 features;
    # every worker holds it, so growth past this is a decision, not a drift)
    assert SHIPPED_MODEL.stat().st_size < 4_000_000
    # When loaded, Then it knows the six intents and a threshold within 0..1
    model = read_model(SHIPPED_MODEL)
    assert set(model.labels) == {
        "ALERT_TRIAGE", "QUERY", "CODE_REVIEW", "SUMMARY", "CHAT", "TOOL_CALL",
    }  # fmt: skip
    assert 0 < model.threshold < 1


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("Create a namespace called feature-x in the dev cluster", "TOOL_CALL"),
        ("幫我把 prod 的 api deployment 的 image 更新成 v2.3.1", "TOOL_CALL"),
        ("how do I scale a deployment?", "QUERY"),
        ("thanks, that worked", "CHAT"),
    ],
)
def test_the_model_reads_the_issues_examples(text: str, intent: str) -> None:
    # Given requests from issue #22, When the model predicts, Then it gets them, and is sure
    guess = load_model().predict(text)
    assert guess.intent == intent
    assert abs(sum(guess.probabilities.values()) - 1.0) < 1e-6


def test_predictions_are_deterministic_across_processes() -> None:
    # Given a text, When predicted here and in a fresh interpreter (another hash seed)
    text = "監控跳出 CPUThrottlingHigh，要不要調 limit？"
    here = load_model().predict(text).confidence
    code = (
        "from aipool.routing.model import load_model;"
        f"print(repr(load_model().predict({text!r}).confidence))"
    )
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
        env={"PYTHONHASHSEED": "12345", "PATH": "/usr/bin:/bin"},
    ).stdout.strip()  # fmt: skip
    # Then the same probability
    assert float(there) == pytest.approx(here, abs=1e-12)


def test_top_features_explain_a_prediction() -> None:
    model = load_model()
    top = model.top_features("please restart payment-api now", "TOOL_CALL")
    assert top and all(weight > 0 for _, weight in top)
    assert len({name for name, _ in top}) == len(top)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "not JSON"),
        ('{"format": "something-else"}', "not an intent model"),
        ('{"format": "aipool-intent-model/1", "labels": ["QUERY"]}', "malformed"),
    ],
)
def test_a_broken_model_file_is_refused_naming_its_path(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "model.json"
    path.write_text(content)
    with pytest.raises(ModelError) as caught:
        read_model(path)
    assert str(path) in str(caught.value) and says in str(caught.value)


def test_weights_that_do_not_match_the_vocabulary_are_refused(tmp_path: Path) -> None:
    data = json.loads(SHIPPED_MODEL.read_text())
    data["vocabulary"] = data["vocabulary"][:-1]
    path = tmp_path / "short.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelError, match="weights for"):
        read_model(path)


def test_a_complexity_head_that_does_not_match_is_refused_naming_the_file(tmp_path: Path) -> None:
    data = json.loads(SHIPPED_MODEL.read_text())
    assert "complexity" in data  # the shipped model carries one
    path = tmp_path / "head.json"
    for change, says in (
        ({"weights": data["weights"]}, "complexity weights for"),
        ({"labels": [1, 2, 3]}, "complexity head's labels"),
        ({"threshold": 2}, "threshold within 0..1"),
    ):
        path.write_text(json.dumps({**data, "complexity": {**data["complexity"], **change}}))
        with pytest.raises(ModelError, match=says) as caught:
            read_model(path)
        assert str(path) in str(caught.value)


def test_a_missing_model_file_is_refused_at_start(tmp_path: Path, monkeypatch) -> None:
    # Given AIPOOL_ROUTING_MODEL_FILE pointing at a file that is not there
    from aipool.errors import SettingsError
    from aipool.settings.startup import check_at_start

    missing = tmp_path / "nope.json"
    monkeypatch.setenv("AIPOOL_ROUTING_MODEL_FILE", str(missing))
    # When a worker checks its settings at start, Then it refuses, naming the variable and path
    with pytest.raises(SettingsError) as caught:
        check_at_start()
    assert f"AIPOOL_ROUTING_MODEL_FILE: {missing}" in str(caught.value)


def test_a_model_file_that_loads_is_the_one_routing_uses(tmp_path: Path, monkeypatch) -> None:
    # Given a copy of the shipped model named by the setting
    from aipool.routing.model import model_path
    from aipool.settings.startup import check_at_start

    copy = tmp_path / "ours.json"
    copy.write_bytes(SHIPPED_MODEL.read_bytes())
    monkeypatch.setenv("AIPOOL_ROUTING_MODEL_FILE", str(copy))
    # Then start accepts it and routing reads that file
    check_at_start()
    assert model_path() == copy
    assert load_model().source == str(copy)


def test_the_intent_head_weighs_no_length_and_no_script() -> None:
    # Given the shipped model and the features that say only how long a text is and its script
    model = read_model(SHIPPED_MODEL)
    shape = [name for name in model.vocabulary if re.fullmatch(r"m\d?:(len\d|cjk|latin)", name)]
    assert {name.partition(":")[2] for name in shape} >= {"len0", "len1", "len5", "cjk", "latin"}
    # Then none of them moves the intent (issue #40: len1 and latin carried a plain sentence to
    # TOOL_CALL), while the complexity head still reads them
    ids = [model.index[name] for name in shape]
    assert all(column[i] == 0.0 for column in model.columns for i in ids)
    assert any(column[i] != 0.0 for column in model.level_columns for i in ids)
    # And a text's features hold none of them: they reach the complexity head alone
    assert not {f for f in features("restart the api") if f in shape}


def test_workers_import_no_training_stack_and_no_numpy_for_routing() -> None:
    # Given a fresh interpreter, When it imports the worker app and routes a request
    code = (
        "import sys; import workers.app; from aipool.routing.router import explain;"
        "explain('restart payment-api');"
        "print(sorted(m for m in ('sklearn', 'scipy', 'numpy', 'aipool.routing.train') if m in sys.modules))"
    )
    import os

    env = {**os.environ, "REDIS_URL": "redis://127.0.0.1:1/0"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    # Then none of the training stack (nor numpy) was imported
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("ids", [(), (3,), (0, 3), (1, 2, 4, 0)])
def test_probabilities_are_the_softmax_of_the_summed_weights_whatever_the_number_of_features(
    ids: tuple[int, ...],
) -> None:
    # Given two classes' weight columns and biases, held as one row per feature
    from array import array

    from aipool.routing.model import _column_sums, _rows, _softmax

    columns = [array("f", [0.5, -1.0, 2.0, 0.25, 1.5]), array("f", [1.0, 0.0, -0.5, 3.0, -2.0])]
    rows = _rows(columns)
    bias = (0.1, -0.2)
    # When the features with these ids are present
    weights = memoryview(b"".join(rows[i] for i in ids)).cast("f")
    sums = _column_sums(weights, 2, range(2))
    got = _softmax(bias, sums, len(ids))
    # Then each class sums its weights one feature at a time, in the ids' order, to the last bit
    assert sums == [sum(c[i] for i in ids) for c in columns]
    # And scores bias + sum of its weights / sqrt(n), softmaxed
    norm = 1 / math.sqrt(len(ids)) if ids else 0.0
    scores = [b + sum(c[i] for i in ids) * norm for b, c in zip(bias, columns, strict=True)]
    exps = [math.exp(s - max(scores)) for s in scores]
    assert got == pytest.approx([e / sum(exps) for e in exps], rel=1e-12)


def test_sums_carried_on_from_earlier_rows_are_the_sums_of_all_the_rows_in_order() -> None:
    # Given weights of varied magnitude, whose float sum depends on the order of adding
    from array import array

    from aipool.routing.model import _column_sums, _rows

    column = array("f", [1e8, 3.5, -1e8, 0.1, 7.25, -2.5e-3, 1.0 / 3])
    rows = _rows([column])
    first, then = (0, 1, 2), (3, 4, 5, 6)
    # When the level head sums the text's rows, then its shape's and points' after them
    head = _column_sums(memoryview(b"".join(rows[i] for i in first)).cast("f"), 1, range(1))
    view = memoryview(b"".join(rows[i] for i in then)).cast("f")
    both = _column_sums(view, 1, range(1), head)
    # Then it is the one sum over all of them, added left to right
    assert both == [sum(column[i] for i in (*first, *then))]
