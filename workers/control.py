"""The pool app's remote control: a worker answers a control command once, without retrying.

kombu's ``Mailbox._publish_reply`` publishes a worker's reply to a broadcast (``inspect``,
``ping``: Flower sends them every few seconds, ``aipool worker`` and the lane check at start too)
with ``retry=True`` and no retry policy: kombu then retries the broker's connection for ever, a
second apart, in the worker's event loop. Redis lost while a worker was answering one held that
loop until Redis came back: the worker never logged that its broker was lost, ``aipool worker``
never said so (``tests/aipool/test_cli_worker.py``, one run in five under load), and nothing else
it does ran meanwhile. A reply is worth something only within the asker's timeout (a second or
two): here it is published once, and one that fails is Celery's "Control command error" (its
pidbox resets), after which the consumer meets the lost connection and reconnects as usual.

A bounded ``retry_policy`` would not do: kombu's ``Producer.publish`` merges it into the
connection's ``transport_options`` (the consumer's own connection here), which its connection
retries then read. :meth:`Mailbox._publish_reply` is kombu's, copied with ``retry=False``;
``tests/workers/test_control.py`` checks the copy against kombu's source.
"""

from __future__ import annotations

from typing import Any

from celery.app.control import Control as CeleryControl
from kombu import Exchange
from kombu.exceptions import InconsistencyError
from kombu.pidbox import Mailbox as KombuMailbox


class Mailbox(KombuMailbox):
    """kombu's mailbox, whose replies are published once."""

    def _publish_reply(
        self,
        reply: Any,
        exchange: Any,
        routing_key: Any,
        ticket: Any,
        channel: Any = None,
        producer: Any = None,
        **opts: Any,
    ) -> None:
        chan = channel or self.connection.default_channel  # type: ignore[union-attr]  # kombu's own line
        exchange = Exchange(
            exchange, exchange_type="direct", delivery_mode="transient", durable=False
        )
        with self.producer_or_acquire(producer, chan) as producer:
            try:  # noqa: SIM105  # kombu's own code, kept as it is (tests/workers/test_control.py)
                producer.publish(
                    reply,
                    exchange=exchange,
                    routing_key=routing_key,
                    declare=[exchange],
                    headers={
                        "ticket": ticket,
                        "clock": self.clock.forward(),  # type: ignore[attr-defined]  # set by kombu's Mailbox
                    },
                    retry=False,
                    **opts,
                )
            except InconsistencyError:
                # queue probably deleted and no one is expecting a reply.
                pass


class Control(CeleryControl):
    """Celery's remote control, with :class:`Mailbox`."""

    Mailbox = Mailbox
