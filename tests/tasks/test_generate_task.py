"""The task class of ``ai.generate`` as Celery's own tracer runs it, without a worker."""

from __future__ import annotations

from typing import Any

import pytest
from celery import Celery
from celery.app.trace import build_tracer

from tasks.generate import GenerateTask
from workers.messages import ANSWER_WITHHELD, event_fields

ANSWER = "the answer, quoting the prompt: my secret payroll question"


def _traced(monkeypatch: pytest.MonkeyPatch, shows_answers: str | None) -> Any:
    """What Celery's tracer hands the worker's parent for an answered hop: (retval, info, runtime,
    repr of the return value)."""
    if shows_answers is None:
        monkeypatch.delenv("AIPOOL_FLOWER_SHOWS_ANSWERS", raising=False)
    else:
        monkeypatch.setenv("AIPOOL_FLOWER_SHOWS_ANSWERS", shows_answers)
    app = Celery("generate-task-test", set_as_current=False)

    @app.task(base=GenerateTask, name="test.answer", shared=False)
    def answer() -> dict[str, Any]:
        return {"v": 1, "status": "ok", "content": ANSWER, "route": {"reason": "x" * 2000}}

    tracer = build_tracer(answer.name, answer, app=app, eager=True)
    return tracer("task-1", (), {}, {"id": "task-1"})


def test_given_answers_withheld_when_a_hop_answers_then_its_answer_is_not_formatted_for_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given AIPOOL_FLOWER_SHOWS_ANSWERS off (the default), when a hop returns its answer
    retval, _, _, shown = _traced(monkeypatch, None)
    # Then the producer's result is the whole answer
    assert retval["content"] == ANSWER
    # while the repr Celery's tracer makes for the parent's task-succeeded event (which withholds
    # it) is an ellipsis, not a kilobyte of the answer formatted on every hop
    assert ANSWER not in shown and len(shown) < 10
    assert event_fields("task-succeeded", {"result": shown}, shows_answers=False) == {
        "result": ANSWER_WITHHELD
    }


def test_given_answers_shown_when_a_hop_answers_then_events_carry_celerys_kilobyte_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, _, _, shown = _traced(monkeypatch, "1")
    assert ANSWER in shown
    assert 1000 <= len(shown) <= 1100  # Celery's default of 1 KB, with its ellipsis
