"""A worker's reply to a control command over a Redis that is gone ends at once.

kombu retried it for ever in the worker's event loop: a worker answering Flower's ``inspect``
when Redis was lost never said it had lost its broker until Redis came back.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import threading
from collections.abc import Iterator

import pytest
from celery import Celery
from kombu.pidbox import Mailbox as KombuMailbox

from tests.support.services import RedisServer
from workers.app import app as pool_app
from workers.control import Control, Mailbox


def _body(source: str) -> str:
    """A function's argument names and statements (no annotations, quotes or comments)."""
    definition = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(definition, ast.FunctionDef)
    arguments = [a.arg for a in definition.args.args] + [a.arg for a in definition.args.kwonlyargs]
    return repr(arguments) + ast.dump(ast.Module(body=definition.body, type_ignores=[]))


def test_the_reply_is_kombus_own_published_once() -> None:
    # The copy is kombu's method with retry=False, nothing else: a kombu upgrade that changes it
    # fails here, and the copy is made again from the new source.
    kombus = inspect.getsource(KombuMailbox._publish_reply)
    assert "retry=True" in kombus
    ours = inspect.getsource(Mailbox._publish_reply)
    assert _body(ours) == _body(kombus.replace("retry=True", "retry=False"))


def test_the_pool_app_answers_with_this_mailbox() -> None:
    assert isinstance(pool_app.control, Control)
    assert isinstance(pool_app.control.mailbox, Mailbox)


@pytest.fixture()
def lost_redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_a_reply_over_a_lost_redis_fails_at_once(lost_redis: RedisServer) -> None:
    # Given a worker's channel to Redis, which then dies
    app = Celery("control", set_as_current=False, control="workers.control:Control")
    app.config_from_object("celeryconfig")
    app.conf.broker_url = lost_redis.url
    with app.connection_for_read() as connection:
        channel = connection.default_channel
        # (that has sent a message, as a worker forwarding a hop has: Celery's publish retry
        # policy is then in its producers' connection, which kombu's reply retried with)
        app.send_task("ai.ping", queue="nobody")
        lost_redis.crash()
        # When it replies to a command
        outcome: list[BaseException | None] = []

        def reply() -> None:
            try:
                app.control.mailbox(connection)._publish_reply(
                    {"pong": "ok"}, "reply.celery.pidbox", "a-client", "a-ticket", channel=channel
                )
                outcome.append(None)
            except Exception as exc:
                outcome.append(exc)

        replying = threading.Thread(target=reply, daemon=True)
        replying.start()
        replying.join(timeout=10)
        # Then the reply fails within seconds (kombu's was still retrying after 30 s)
        assert not replying.is_alive(), "the reply is still retrying a lost Redis"
        assert outcome and outcome[0] is not None
