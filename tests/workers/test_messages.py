"""Messages of ai.generate built by the pool's app show no prompt in headers or task-sent events."""

from __future__ import annotations

from workers.app import app
from workers.edge.withholding import WITHHELD

PROMPT = "my secret prompt about payroll"


def _message(name: str, **options: object) -> object:
    return app.amqp.create_task_message(
        "task-1",
        name,
        (),
        {"request": {"prompt": PROMPT}},
        create_sent_event=True,
        **options,
    )


def test_given_ai_generate_sent_by_name_when_built_then_neither_header_nor_event_shows_the_prompt() -> (
    None
):
    # When a Python service sends ai.generate by name through the pool's app (no kwargsrepr)
    message = _message("ai.generate")
    # Then what Flower shows (the headers' reprs and the task-sent event) withholds the request
    headers, sent_event = message.headers, message.sent_event  # type: ignore[attr-defined]
    assert headers["kwargsrepr"] == WITHHELD
    assert headers["argsrepr"] == "()"
    assert PROMPT not in repr(sent_event)
    # while the message itself still carries the request for the worker
    assert message.body[1]["request"]["prompt"] == PROMPT  # type: ignore[attr-defined]


def test_given_a_description_of_the_hop_when_built_then_it_is_what_is_shown() -> None:
    shown = "{'intent': 'general', 'hop': 0, 'provider': 'ollama', 'model': 'llama3.2:3b'}"
    message = _message("ai.generate", kwargsrepr=shown)
    assert message.headers["kwargsrepr"] == shown  # type: ignore[attr-defined]


def test_given_another_task_when_built_then_celery_shows_its_arguments_as_usual() -> None:
    message = _message("aipool.breaker_transition")
    assert PROMPT in message.headers["kwargsrepr"]  # type: ignore[attr-defined]


def test_given_answers_hidden_when_a_task_succeeded_event_is_sent_then_it_carries_no_answer() -> (
    None
):
    from workers.messages import ANSWER_WITHHELD, event_fields

    fields = {"result": "{'content': 'the answer quoting my secret prompt'}", "runtime": 0.2}
    # Given AIPOOL_FLOWER_SHOWS_ANSWERS off (the default): the answer is withheld, the rest kept
    assert event_fields("task-succeeded", fields, shows_answers=False) == {
        "result": ANSWER_WITHHELD,
        "runtime": 0.2,
    }
    # Given it on: Celery's event as it is
    assert event_fields("task-succeeded", fields, shows_answers=True) == fields
    # Other events carry no answer and pass as they are
    assert event_fields("task-started", {"pid": 1}, shows_answers=False) == {"pid": 1}


def test_given_the_setting_when_read_then_answers_are_hidden_unless_it_says_otherwise() -> None:
    from aipool.settings import read_settings

    assert read_settings({}).checked().flower_shows_answers is False
    shown = read_settings({"AIPOOL_FLOWER_SHOWS_ANSWERS": "1"}).checked()
    assert shown.flower_shows_answers is True
