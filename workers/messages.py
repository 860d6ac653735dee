"""What task messages and task events show of a request: an ``ai.generate`` message never shows its
prompt, and its events never show its answer unless ``AIPOOL_FLOWER_SHOWS_ANSWERS`` is on.

Celery puts ``argsrepr`` and ``kwargsrepr`` (by default the repr of the arguments) in every message
header and in the ``task-sent`` event a producer sends when ``task_send_sent_event`` is on (the
pool's settings turn it on, for Flower). Flower shows both. The pool's own re-dispatches name the
hop instead (``tasks.generate.describe``); anything else that sends ``ai.generate`` through this
app without saying what to show (a Python service sending by name) gets the request withheld here,
before the message or its event is built. The workers withhold it again on receipt
(``workers.edge.withholding``) for producers that do not use this app.
"""

from __future__ import annotations

from typing import Any

from celery.app.amqp import AMQP as CeleryAMQP
from celery.worker.request import Request as CeleryRequest

from aipool.settings import settings
from workers.edge.withholding import GENERATE, WITHHELD


class AMQP(CeleryAMQP):
    """Celery's message builder with the request of ``ai.generate`` withheld from its reprs."""

    def as_task_v2(self, task_id: str, name: str, *args: Any, **kwargs: Any) -> Any:
        if name == GENERATE:
            if kwargs.get("kwargsrepr") is None:
                kwargs["kwargsrepr"] = WITHHELD
            if kwargs.get("argsrepr") is None:
                kwargs["argsrepr"] = "()"
        return super().as_task_v2(task_id, name, *args, **kwargs)


#: What a task-succeeded event of ``ai.generate`` says of the answer while Flower shows no answers.
ANSWER_WITHHELD = "<answer withheld: AIPOOL_FLOWER_SHOWS_ANSWERS is off>"


def event_fields(event: str, fields: dict[str, Any], shows_answers: bool) -> dict[str, Any]:
    """The fields an ``ai.generate`` task event carries: the answer (the ``task-succeeded``
    event's result, Celery's repr of up to 1 KB of it) only when answers may be shown."""
    if event == "task-succeeded" and "result" in fields and not shows_answers:
        return {**fields, "result": ANSWER_WITHHELD}
    return fields


class AnswerWithheldRequest(CeleryRequest):
    """A worker's request of ``ai.generate`` whose task events never carry the answer.

    Flower, and anything else reading the pool's events, shows the task-succeeded event's result:
    the answer, which may quote its prompt. An operator watching queues should not need access to
    answers (issue #21), so the event says it was withheld; ``AIPOOL_FLOWER_SHOWS_ANSWERS=1``
    restores Celery's behaviour. The worker's parent sends the events, so this runs there.
    """

    def send_event(self, type: str, **fields: Any) -> None:
        super().send_event(type, **event_fields(type, fields, settings().flower_shows_answers))
