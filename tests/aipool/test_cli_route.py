"""``aipool route``, ``route eval`` and ``route train`` as an operator runs them."""

from __future__ import annotations

import json
from pathlib import Path

from aipool.cli import run
from tests.support.cli import fresh_env, run_aipool


def test_route_text_still_explains(capsys) -> None:
    # Given the old form, When run, Then the decision and what matched (on screen only)
    assert run(["route", "幫我重啟 payment-api"]) == 0
    out = capsys.readouterr().out
    assert "TOOL_CALL" in out and "tools" in out and "matched (not stored)" in out


def test_eval_prints_the_figures_and_the_tier_matrix(tmp_path: Path, capsys) -> None:
    # Given a TSV of three labelled requests
    path = tmp_path / "mine.tsv"
    path.write_text(
        "What is a PodDisruptionBudget?\tQUERY\t1\n"
        "restart payment-api\tTOOL_CALL\t2\n"
        "payments 5xx up, ledger-db lag 40 s, reconciliation job failing. Correlate these.\tALERT_TRIAGE\t4\n"
    )
    # When evaluated
    assert run(["route", "eval", str(path)]) == 0
    out = capsys.readouterr().out
    # Then accuracy, macro-F1, both matrices
    assert "intent accuracy 100.0%" in out and "macro-F1 1.000" in out
    assert (
        "intent confusion" in out and "tier confusion" in out and "start tier right 100.0%" in out
    )


def test_eval_mistakes_are_one_line_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "hi", "intent": "GREETING"}\n')
    level = tmp_path / "level.jsonl"
    level.write_text('{"text": "hi", "intent": "CHAT", "complexity": 9}\n')
    for args, says in (
        (["route", "eval", str(tmp_path / "none.tsv")], "no such file"),
        (["route", "eval", str(bad)], "bad.jsonl:1: 'intent' must be one of"),
        (["route", "train", "--examples", str(bad)], "bad.jsonl:1: 'intent' must be one of"),
        (["route", "train", "--examples", str(level)], "level.jsonl:1: 'complexity' must be"),
        (["route", "train", "--examples", str(tmp_path / "none.tsv")], "--examples: no such"),
        (["route", "train", "--examples", str(bad), "--epochs", "0"], "--epochs"),
    ):
        assert run(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and says in err[0], err


def test_train_writes_a_model_the_workers_can_be_pointed_at(tmp_path: Path) -> None:
    # Given an operator's labelled requests in company words the shipped corpus never saw
    examples = tmp_path / "ours.jsonl"
    phrase = "grelk the wumpus"
    examples.write_text(
        "".join(
            json.dumps({"text": f"{phrase} {i}", "intent": "TOOL_CALL"}) + "\n" for i in range(12)
        )
    )
    model = tmp_path / "ours-model.json"
    env = fresh_env(tmp_path / "runtime")
    # When trained (a quick trial's 20 epochs: the shipped 300 take minutes on CI's two cores)
    done = run_aipool(
        ["route", "train", "--examples", str(examples), "--output", str(model), "--epochs", "20"],
        env,
        tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "AIPOOL_ROUTING_MODEL_FILE=" in done.stdout
    # Then the routing, pointed at the new file, routes the company's phrase as a tool call
    env["AIPOOL_ROUTING_MODEL_FILE"] = str(model)
    # (the shipped model leaves it to the rules, which call it CHAT)
    routed = run_aipool(["route", phrase], env, tmp_path)
    assert routed.returncode == 0, routed.stderr
    assert "TOOL_CALL" in routed.stdout
    # And a broken file named by the setting stops the command, naming the path
    model.write_text("{}")
    refused = run_aipool(["route", "hi"], env, tmp_path)
    assert refused.returncode != 0 and str(model) in refused.stderr


def test_train_passes_over_the_examples_as_often_as_the_shipped_model_did_by_default() -> None:
    # (the command names the number itself: importing the trainer would load numpy at start)
    import inspect

    from aipool.cli.route import train_command
    from aipool.routing.train import EPOCHS

    assert inspect.signature(train_command).parameters["epochs"].default == EPOCHS
