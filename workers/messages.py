"""How the pool's app builds task messages: an ``ai.generate`` message never shows its prompt.

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
