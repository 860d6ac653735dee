"""kombu's Redis transport with each envelope checked before kombu builds a message from it, one
Redis client reused for its publishes, and a command riding with a message sent in its round trip.

:meth:`RedisChannel._brpop_read` is a copy of kombu's private ``Channel._brpop_read`` with one line
changed. kombu is pinned to the minor version it was copied from (``kombu~=5.7.0``), and
``tests/workers/edge/test_transport.py`` fails when the installed kombu's method differs from the
source it was copied from (kept beside that test): port kombu's change here, then replace the kept
source and :data:`COPIED_FROM`.

kombu's ``Channel.conn_or_acquire`` builds a new ``redis.Redis`` for every command it runs without
a client: every task message published (``LPUSH``) and every task event (``PUBLISH``). The client
is only a front for the channel's connection pool, but redis-py 8 fills a table of some 170
response callbacks for each one, about 85 µs of CPU here, as much as the command itself
(docs/benchmarks.md). :meth:`RedisChannel.conn_or_acquire` keeps one per connection pool instead;
a test keeps kombu's method the one it replaces.

:meth:`RedisChannel._put` sends a command riding with the message (:mod:`aipool.redis.riding`:
``submit()``'s claim of the task id it minted) in the message's own pipeline, where both are for
one Redis: one round trip for the two. It lets kombu's ``_put`` name the message's commands
through the publish-batch hook kombu's own batching uses, and runs them after the rider's.

A channel outlives its transport's link to the connection: kombu's ``Connection.collect`` (which
Celery's consumer runs when the broker is lost) detaches the transport (``transport.client =
None``) even when closing a channel failed midway, as it does when Redis is gone while the
channel waits in BRPOP. Closing that channel again, or acknowledging a message it delivered once
the task ends, builds a new connection pool from ``transport.client`` and raised ``AttributeError:
'NoneType' object has no attribute 'hostname'`` through the worker's event loop: the worker died
(issue #42). :class:`RedisChannel` keeps the connection it was opened for, and builds its pools
from it once detached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from queue import Empty
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.utils.encoding import bytes_to_str
from kombu.utils.json import loads

from aipool.redis import riding
from aipool.redis.sentinel import pool_place
from workers.edge.inspection import Refusal, log_refusal, refusal

#: The kombu release :meth:`RedisChannel._brpop_read` was copied from.
COPIED_FROM = "5.7.0"


@dataclass(frozen=True)
class _Detached:
    """What kombu's pool building reads of a transport (``client``, ``default_port``), kept for a
    channel whose transport no longer has them."""

    client: Any
    default_port: int | None


class RedisChannel(kombu_redis.Channel):
    """kombu's Redis channel, checking each envelope before a message is built from it,
    publishing through one reused client, and able to reach Redis after its transport was
    detached from the connection."""

    _reused: Any = None

    def __init__(self, connection: Any, *args: Any, **kwargs: Any) -> None:
        # Kept before kombu's __init__, which may already build a pool.
        self._opened_for = _Detached(connection.client, connection.default_port)
        super().__init__(connection, *args, **kwargs)

    @contextmanager
    def _attached(self) -> Iterator[None]:
        """Run kombu's pool building with the connection this channel was opened for, when its
        transport was detached (``client`` None) or the channel already left it (``connection``
        None): its unacked messages are still given back and acknowledged through a new pool.
        """
        transport = self.connection
        if transport is not None and transport.client is not None:
            yield
            return
        # Only a channel that lost its transport gets here: the main process's event loop, closing
        # it or acknowledging a message of it; kombu's own reads are all it serves.
        self.connection = self._opened_for  # type: ignore[assignment]  # a stand-in with what kombu reads of a transport
        try:
            yield
        finally:
            self.connection = transport

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        with self._attached():
            params: dict[str, Any] = super()._connparams(asynchronous)  # type: ignore[misc]  # private, not in celery-types' stub
        return params

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        # kombu's yields ``client`` or a new one from _create_client(); a client holds no
        # connection of its own (each command takes one from the pool), so one per pool serves
        # every thread. A new pool (kombu makes one after a disconnect or a fork) gets a new one.
        if client:
            yield client
            return
        pool = self.pool
        reused = self._reused
        if reused is None or reused.connection_pool is not pool:
            reused = self._reused = self._create_client()  # type: ignore[attr-defined]  # private, not in celery-types' stub
        yield reused

    def _put(self, queue: str, message: Any, **kwargs: Any) -> None:
        # A command riding with this message (aipool.redis.riding: submit()'s claim of the id it
        # minted) goes in the message's own pipeline, ahead of it, when both are for one Redis and
        # kombu would itself pipeline a publish (a client that retries might replay the LPUSH).
        rider = riding.current()
        if (
            rider is None
            or kwargs.get("_publish_batch") is not None
            or not self.supports_batch_publish  # type: ignore[attr-defined]  # kombu 5.7's, not in celery-types' stub
            or pool_place(self.pool) != rider.place
        ):
            super()._put(queue, message, **kwargs)
            return
        # kombu's own _put names the message's commands (LPUSH, and PEXPIRE on a queue that
        # expires) through its publish-batch hook; they are sent here, after the rider's.
        commands = _Commands()
        super()._put(queue, message, _publish_batch=commands, **kwargs)  # type: ignore[call-arg]  # kombu 5.7's Redis _put takes it; the stub's base does not
        with self.conn_or_acquire() as client, client.pipeline(transaction=False) as pipe:
            rider.command(pipe)
            for name, args in commands.added:
                getattr(pipe, name)(*args)
            replies = pipe.execute(raise_on_error=False)
        rider.answered(replies[0])
        failed = next((r for r in replies[1:] if isinstance(r, Exception)), None)
        if failed is not None:
            raise failed

    def _brpop_read(self, **options: Any) -> bool:
        # kombu's _brpop_read (COPIED_FROM) with the envelope check in place of its bare ``loads``.
        try:
            try:
                dest__item = self.client.parse_response(self.client.connection, "BRPOP", **options)
            except self.connection_errors:  # type: ignore[attr-defined]  # private, not in celery-types' stub
                self.client.connection.disconnect()
                raise
            if not dest__item:
                raise Empty()
            dest, item = dest__item
            dest = bytes_to_str(dest).rsplit(self.sep, 1)[0]
            self._queue_cycle.rotate(dest)  # type: ignore[attr-defined]  # private, not in celery-types' stub
            envelope = self._checked_envelope(item, dest)
            if envelope is None:
                raise Empty()
            self.connection._deliver(envelope, dest)
            return True
        finally:
            self._in_poll = None
            self._flush_brpop_reauth()  # type: ignore[attr-defined]  # private, not in celery-types' stub

    def _checked_envelope(self, item: bytes, queue: str) -> dict[str, Any] | None:
        """The envelope ``item`` decoded, or None (and the refusal reported) if kombu cannot use it.

        The item is already off the list and not yet in the unacked set: dropping it here removes
        it for good.
        """
        try:
            envelope = loads(bytes_to_str(item))
        except (ValueError, RecursionError):
            self.connection.on_refused(  # type: ignore[attr-defined]  # RedisTransport's own (its __init__)
                refusal("malformed_message", "envelope is not JSON", queue=queue)
            )
            return None
        problem = self._envelope_problem(envelope)
        if problem is None:
            checked: dict[str, Any] = envelope
            return checked
        headers = envelope.get("headers") if isinstance(envelope, dict) else None
        self.connection.on_refused(refusal("malformed_message", problem, headers, queue=queue))  # type: ignore[attr-defined]  # RedisTransport's own (its __init__)
        return None

    def _envelope_problem(self, envelope: Any) -> str | None:
        if not isinstance(envelope, dict):
            return "envelope is not a JSON object"
        properties = envelope.get("properties")
        if not isinstance(properties, dict):
            return "envelope has no properties object"
        if not isinstance(properties.get("delivery_tag"), str):
            return "envelope has no delivery tag"
        delivery_info = properties.get("delivery_info")
        # The unacked set records (exchange, routing key) to give a message back later.
        if not (
            isinstance(delivery_info, dict)
            and isinstance(delivery_info.get("exchange"), str)
            and isinstance(delivery_info.get("routing_key"), str)
        ):
            return "envelope has no delivery_info with exchange and routing_key"
        headers = envelope.get("headers")
        if headers is not None and not isinstance(headers, dict):
            return "envelope headers are not an object"
        if headers and headers.get("compression") is not None:
            # Decompressing happens while the message is built, before any check could bound it.
            return "compressed messages are refused"
        try:
            self.Message(envelope, channel=self)
        except Exception as exc:
            return f"envelope body cannot be read ({type(exc).__name__})"
        return None


class _Commands:
    """What kombu's ``_put`` hands its publish batch (``add``): the message's Redis commands."""

    def __init__(self) -> None:
        self.added: list[tuple[str, tuple[Any, ...]]] = []

    def add(self, name: str, *args: Any) -> None:
        self.added.append((name, args))


class RedisTransport(kombu_redis.Transport):
    """kombu's Redis transport with :class:`RedisChannel`."""

    Channel = RedisChannel

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Called with each envelope the channel drops. It only logs; the worker's consumer
        #: replaces it with one that also answers the producer.
        self.on_refused: Callable[[Refusal], None] = log_refusal


class SentinelChannel(RedisChannel, kombu_redis.SentinelChannel):
    """:class:`RedisChannel` on a Redis behind Sentinel: kombu's Sentinel channel finds the
    master (its connection pool asks the sentinels at each connection), this one checks the
    envelopes and reuses its publishing client (a new pool after a failover gets a new one)."""

    def _sentinel_managed_pool(self, asynchronous: bool = False) -> Any:
        # kombu's reads the sentinels' addresses from ``self.connection.client`` too.
        with self._attached():
            return super()._sentinel_managed_pool(asynchronous)  # type: ignore[misc]  # private, not in celery-types' stub


class SentinelTransport(RedisTransport):
    """kombu's Sentinel transport (``sentinel://``) with :class:`SentinelChannel`."""

    Channel = SentinelChannel
    default_port = kombu_redis.SentinelTransport.default_port
