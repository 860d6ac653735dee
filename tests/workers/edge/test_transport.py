"""The Redis transport: its copy of kombu's private ``Channel._brpop_read`` stays the method it copies,
and it publishes through one Redis client per connection pool."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import redis
from kombu import Connection, Producer
from kombu.transport import redis as kombu_redis
from packaging.version import Version

from aipool.redis.riding import Rider, riding
from aipool.redis.sentinel import pool_place
from workers.edge.transport import COPIED_FROM, RedisChannel

KEPT_SOURCE = Path(__file__).with_name("kombu_brpop_read.txt")


def test_the_installed_kombu_is_the_minor_release_the_method_was_copied_from() -> None:
    installed, copied = Version(version("kombu")), Version(COPIED_FROM)
    assert (installed.major, installed.minor) == (copied.major, copied.minor)


def test_kombus_brpop_read_is_still_the_source_the_pool_copied() -> None:
    # A difference means kombu changed the method workers/edge/transport.py overrides: port the
    # change into RedisChannel._brpop_read, then keep the new source here.
    assert inspect.getsource(kombu_redis.Channel._brpop_read) == KEPT_SOURCE.read_text()


KEPT_ACQUIRE = Path(__file__).with_name("kombu_conn_or_acquire.txt")


def test_kombus_conn_or_acquire_is_still_the_method_the_pool_replaces() -> None:
    # RedisChannel.conn_or_acquire replaces it with one client per pool: a difference means kombu
    # changed how it makes the client it publishes with; port it, then keep the new source here.
    source = inspect.getsource(kombu_redis.Channel.conn_or_acquire) + inspect.getsource(
        kombu_redis.Channel._create_client
    )
    assert source == KEPT_ACQUIRE.read_text()


@pytest.fixture
def channel(redis_client: redis.Redis) -> Iterator[RedisChannel]:
    url = redis_client.connection_pool.connection_kwargs
    connection = Connection(
        f"redis://{url['host']}:{url['port']}/{url['db']}",
        transport="workers.edge.transport:RedisTransport",
    )
    try:
        chan = connection.default_channel
        assert isinstance(chan, RedisChannel)
        yield chan
    finally:
        connection.release()


def test_given_many_publishes_when_sent_then_one_client_serves_them_all(
    channel: RedisChannel, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the pool's transport, counting the Redis clients it makes
    made: list[object] = []
    real = channel._create_client

    def counted(*args: Any, **kwargs: Any) -> Any:
        client = real(*args, **kwargs)
        made.append(client)
        return client

    monkeypatch.setattr(channel, "_create_client", counted)
    queue = f"test-reuse-{uuid.uuid4().hex}"
    producer = Producer(channel, routing_key=queue)
    # When 20 messages and 20 fanout events are published
    try:
        for n in range(20):
            producer.publish({"n": n}, routing_key=queue)
            channel._put_fanout("celeryev", {"body": n}, "task.sent")
        # Then every message landed, and one client (not 40) sent them
        assert redis_client.llen(queue) == 20
        assert len(made) == 1
    finally:
        redis_client.delete(queue)


def test_given_the_pools_disconnected_when_published_then_a_new_client_on_the_new_pool_sends_it(
    channel: RedisChannel, redis_client: redis.Redis
) -> None:
    # Given a publish through the reused client
    queue = f"test-reuse-{uuid.uuid4().hex}"
    producer = Producer(channel, routing_key=queue)
    try:
        producer.publish({"n": 1}, routing_key=queue)
        first = channel._reused
        # When kombu drops its pools (a lost connection, a fork) and publishes again
        channel._disconnect_pools()
        producer.publish({"n": 2}, routing_key=queue)
        # Then the message lands, sent by a client of the new pool
        assert redis_client.llen(queue) == 2
        assert channel._reused is not first
        assert channel._reused.connection_pool is channel.pool
    finally:
        redis_client.delete(queue)


def test_a_channel_detached_from_its_transport_still_reaches_redis(
    channel: RedisChannel, redis_client: redis.Redis
) -> None:
    # Given a channel whose pools were dropped and whose transport kombu detached from the
    # connection (Connection.collect after closing the channel failed: issue #42)
    channel._disconnect_pools()
    transport = channel.connection
    transport.client = None
    # When it must give back or acknowledge a message, it builds its pool from the connection it
    # was opened for (kombu's raised AttributeError ... 'hostname')
    with channel.conn_or_acquire() as client:
        assert client.ping()
    # And once it left its transport altogether, too
    channel._disconnect_pools()
    channel.connection = None
    with channel.conn_or_acquire() as client:
        assert client.ping()
    channel.connection = transport


def _claim(redis_client: redis.Redis, key: str, place: tuple[Any, ...] | None = None) -> Rider:
    # A rider as submit() makes one: SET NX of a key, for the Redis at ``place``.
    return Rider(
        place or pool_place(redis_client.connection_pool),
        lambda pipe: pipe.set(key, "journey", nx=True, ex=60),
    )


def test_a_rider_for_the_messages_redis_goes_in_the_messages_round_trip_and_only_the_first(
    channel: RedisChannel, redis_client: redis.Redis
) -> None:
    # Given a claim offered to the messages published while it rides
    queue, key = f"test-ride-{uuid.uuid4().hex}", f"aipool:test-ride:{uuid.uuid4().hex}"
    producer = Producer(channel, routing_key=queue)
    try:
        with riding(_claim(redis_client, key)) as rider:
            # When two messages are published
            producer.publish({"n": 1}, routing_key=queue)
            redis_client.delete(key)
            producer.publish({"n": 2}, routing_key=queue)
        # Then both landed, the first carried the claim (its reply kept for the caller) and the
        # second did not send it again
        assert redis_client.llen(queue) == 2
        assert (rider.sent, rider.reply) == (True, True)
        assert not redis_client.exists(key)
    finally:
        redis_client.delete(queue, key)


def test_a_rider_for_another_redis_is_left_to_its_caller(
    channel: RedisChannel, redis_client: redis.Redis
) -> None:
    # Given a claim for another Redis server than the message's
    queue, key = f"test-ride-{uuid.uuid4().hex}", f"aipool:test-ride:{uuid.uuid4().hex}"
    elsewhere = ("127.0.0.1", 1, 0, None)
    with riding(_claim(redis_client, key, elsewhere)) as rider:
        # When the message is published
        Producer(channel, routing_key=queue).publish({"n": 1}, routing_key=queue)
    try:
        # Then the message landed without it: the claim is unsent, for its caller to send
        assert redis_client.llen(queue) == 1
        assert not rider.sent and not redis_client.exists(key)
    finally:
        redis_client.delete(queue)


def test_a_rider_redis_answers_with_an_error_loses_no_message(
    channel: RedisChannel, redis_client: redis.Redis
) -> None:
    # Given a riding command Redis answers with an error (INCR of a value that is no number)
    queue, key = f"test-ride-{uuid.uuid4().hex}", f"aipool:test-ride:{uuid.uuid4().hex}"
    redis_client.set(key, "journey")
    failing = Rider(pool_place(redis_client.connection_pool), lambda pipe: pipe.incr(key))
    try:
        with riding(failing) as rider:
            # When the message is published
            Producer(channel, routing_key=queue).publish({"n": 1}, routing_key=queue)
        # Then the message landed all the same, and the claim's error is its caller's to read
        assert redis_client.llen(queue) == 1
        assert rider.sent and isinstance(rider.reply, redis.ResponseError)
    finally:
        redis_client.delete(queue, key)


def test_a_rider_does_not_ride_on_a_client_that_retries_commands(redis_client: redis.Redis) -> None:
    # Given a channel whose client retries a command on a timeout (a pipeline's retry could
    # push the message twice: kombu does not batch publishes there either)
    url = redis_client.connection_pool.connection_kwargs
    connection = Connection(
        f"redis://{url['host']}:{url['port']}/{url['db']}",
        transport="workers.edge.transport:RedisTransport",
        transport_options={"retry_on_timeout": True},
    )
    queue, key = f"test-ride-{uuid.uuid4().hex}", f"aipool:test-ride:{uuid.uuid4().hex}"
    try:
        with riding(_claim(redis_client, key)) as rider:
            # When a message is published
            Producer(connection.default_channel, routing_key=queue).publish(
                {"n": 1}, routing_key=queue
            )
        # Then it went alone, and the claim is left to its caller
        assert redis_client.llen(queue) == 1
        assert not rider.sent
    finally:
        redis_client.delete(queue)
        connection.release()
