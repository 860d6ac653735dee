"""The task class of ``ai.generate`` as Celery's own tracer runs it, without a worker."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest
from celery import Celery
from celery.app.trace import build_tracer

import tasks.generate as generate_module
from aipool.attempt.identity import journey_id
from aipool.attempt.layout import answer_key
from tasks.generate import GenerateTask, kept_answer_replayable
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


def _hop_kwargs(provider: str) -> dict[str, Any]:
    """A provider hop's message kwargs: the request and the journey at its first hop."""
    chain = [{"provider": provider, "model": "m"}, {"provider": "static", "model": ""}]
    return {"request": {"prompt": "q"}, "journey": {"route": {"chain": chain}, "position": 0}}


def test_given_a_hard_kill_after_finish_then_the_kept_answer_is_replayed_once_per_journey(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given the pool's Redis (fakeredis) and a Claude hop whose attempt kept its answer
    client = fakeredis.FakeRedis()
    monkeypatch.setattr(generate_module, "shared_redis", lambda: client)
    kwargs = _hop_kwargs("claude")
    name = journey_id("task-1", kwargs["request"])
    # When the hard limit kills it before an answer was kept, the producer is answered time_limit
    assert not kept_answer_replayable("task-1", kwargs)
    client.set(answer_key(name, "claude"), "{}")
    # Then with the answer kept, the message is given back once; a second kill is time_limit
    assert kept_answer_replayable("task-1", kwargs)
    assert not kept_answer_replayable("task-1", kwargs)
    # And the router's hop (no journey: no call was made) or a malformed one is never given back
    assert not kept_answer_replayable("task-2", {"request": {"prompt": "q"}})
    assert not kept_answer_replayable("task-3", {"journey": {"position": "x"}})
