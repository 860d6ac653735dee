"""Training: a linear model that learns what it is shown, and nothing from the test split."""

from __future__ import annotations

import pytest

from aipool.routing.train import Example, examples_from_rows, fit, train


def test_a_model_learns_a_small_labelled_set() -> None:
    # Given a few examples of two intents, each phrasing seen twice
    examples = [
        Example(text, intent)
        for text, intent in [
            ("please restart the api", "TOOL_CALL"), ("restart the worker now", "TOOL_CALL"),
            ("what is a pod", "QUERY"), ("what is a node", "QUERY"),
        ] * 2
    ]  # fmt: skip
    # When trained
    model = fit(examples, epochs=200)
    # Then it gets its own examples right, and a near phrasing too
    assert model.predict("please restart the api").intent == "TOOL_CALL"
    assert model.predict("what is a service").intent == "QUERY"


def test_unknown_labels_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown intent"):
        train([Example("hi", "GREETING")])


def test_requests_with_tools_are_left_to_the_tools_rule() -> None:
    rows = [
        {"text": "hi", "intent": "TOOL_CALL", "tools": [{"name": "x"}]},
        {"text": "hi", "intent": "CHAT"},
    ]
    assert examples_from_rows(rows) == [Example("hi", "CHAT")]


def test_training_never_reads_the_test_split(monkeypatch, tmp_path) -> None:
    # Given the corpus loader watched
    from aipool.routing import corpus
    from aipool.routing import train as training

    read: list[str] = []
    real = corpus.load

    def watched(split: str):
        read.append(split)
        return real(split)[:40]

    monkeypatch.setattr(corpus, "load", watched)
    monkeypatch.setattr(training, "EPOCHS", 5)
    # When a model is trained with an operator's examples
    training.train_with(
        [{"text": "page the dba", "intent": "TOOL_CALL"}], tmp_path / "m.json", source="x"
    )
    # Then only train and dev were read
    assert sorted(read) == ["dev", "train"]


def test_examples_with_a_complexity_teach_the_complexity_head() -> None:
    # Given requests of one intent at two levels, the harder ones asking to correlate nothing the
    # keyword scorer counts (its points alone would not tell them apart)
    easy = ["grelk the wumpus", "grelk a wumpus", "grelk one wumpus"]
    hard = ["frobnicate the whole zorg", "frobnicate every zorg", "frobnicate all zorgs"]
    examples = [Example(t, "QUERY", 2) for t in easy] + [Example(t, "QUERY", 4) for t in hard]
    # When trained
    model = fit(examples * 2, epochs=200)
    # Then the model has a complexity head that tells them apart
    assert model.has_levels
    assert model.level("grelk the wumpus", 2).level == 2
    assert model.level("frobnicate the whole zorg", 2).level == 4


def test_examples_without_a_complexity_leave_complexity_to_the_scorer() -> None:
    model = fit([Example("what is a pod", "QUERY"), Example("restart it", "TOOL_CALL")] * 2)
    assert not model.has_levels and model.level("what is a pod", 2) is None


def test_an_example_the_contract_would_refuse_still_trains() -> None:
    # Given an operator's examples with a prompt over the contract's size limit and a NUL in one
    examples = [
        Example("x " * 600_000, "QUERY", 2),
        Example("hi\x00 there", "CHAT", 1),
        Example("restart it", "TOOL_CALL", 1),
    ] * 2
    # When trained, Then the complexity head is built from them all (they are scored, not parsed)
    assert train(examples, epochs=5)["trained"]["graded"] == 6
