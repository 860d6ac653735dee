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
