"""The Redis the pool shares: ``REDIS_URL``, or the embedded server a command is running.

Production sets ``REDIS_URL``. On one machine (the demo, a laptop) a command that owns an embedded
Redis (``aipool demo``, ``aipool redis``; see :mod:`aipool.redis.embedded`) announces it, and every
other process finds it here. Nothing here starts a Redis: a producer must enqueue where the
workers listen, so without either it gets :class:`~aipool.errors.NoRedis` saying what to do.
redis-py and kombu spell a Unix socket differently (``unix://`` and ``redis+socket://``), so each
gets its own accessor. A Redis behind Sentinel is spelled the same for all (``sentinel://``, see
:mod:`aipool.redis.sentinel`): every client built here follows its master across a failover.
"""

from __future__ import annotations

import os
from typing import Any

from aipool.errors import NoRedis, PoolUnavailable, SettingsError
from aipool.redis import sentinel
from aipool.redis.embedded import RunningRedis, find_running
from aipool.settings import settings
from aipool.views.pool_location import describe_redis

#: How to give a process a Redis, for error messages.
HOW_TO_GET_ONE = (
    "set REDIS_URL (e.g. redis://127.0.0.1:6379/0), or start an embedded one in another "
    "terminal with `aipool redis` (or run `aipool demo`)"
)


def redis_url() -> str:
    """The Redis URL for redis-py clients (broker, results, breaker, quota, ledger spool).

    ``REDIS_URL`` when set; otherwise the running embedded Redis, which this process then adopts
    with its ledger (see :func:`adopt_embedded`). Raises :class:`NoRedis` when there is neither.
    """
    url = settings().redis_url
    if url:
        return url
    running = adopt_embedded()
    if running is None:
        raise NoRedis(f"REDIS_URL is not set and no embedded Redis is running: {HOW_TO_GET_ONE}")
    return running.redis_url


def adopt_embedded() -> RunningRedis | None:
    """When ``REDIS_URL`` is unset, find the running embedded Redis and make it this process's:
    ``REDIS_URL`` and (unless set) ``DATABASE_URL`` are set to it and its ledger, so every part
    of the process, and every process it starts, reads one pool. ``None`` when none runs."""
    if settings().redis_url:
        return None
    running = find_running()
    if running is not None:
        os.environ["REDIS_URL"] = running.redis_url
        os.environ.setdefault("DATABASE_URL", running.database_url)
    return running


def client_for(url: str, **options: Any) -> Any:
    """A redis-py client for ``url`` with ``options``: one server's, or, for a ``sentinel://``
    URL, the master the sentinels name (``AIPOOL_REDIS_SENTINEL_MASTER``), followed across
    failovers. Every Redis client of the pool is built here."""
    if sentinel.is_sentinel(url):
        s = settings()
        return sentinel.master_client(
            url, _master_name(), sentinel_password=s.secret("AIPOOL_REDIS_SENTINEL_PASSWORD"),
            **options,
        )  # fmt: skip
    import redis

    return redis.Redis.from_url(url, **options)


def _master_name() -> str:
    master = settings().redis_sentinel_master
    if not master:
        # The settings refuse a sentinel:// REDIS_URL without it; a URL from elsewhere lands here.
        raise SettingsError(
            [
                "a sentinel:// URL needs AIPOOL_REDIS_SENTINEL_MASTER, the name the sentinels "
                "monitor the master by"
            ]
        )
    return master


def sentinel_transport_options() -> dict[str, Any]:
    """What kombu (broker) and Celery (results) need beside a ``sentinel://`` URL: the master's
    name, and how to reach the sentinels (their password, the pool's timeouts)."""
    s = settings()
    return sentinel.transport_options(
        _master_name(),
        s.secret("AIPOOL_REDIS_SENTINEL_PASSWORD"),
        socket_connect_timeout=s.redis_connect_timeout_s,
        socket_timeout=s.redis_socket_timeout_s,
    )


def connect(url: str | None = None) -> Any:
    """A redis-py client for ``url`` (default: :func:`redis_url`) with connect and socket timeouts.

    A hung Redis must fail a step quickly (the hop then answers or moves on) instead of holding it
    until the task's soft time limit (``AIPOOL_REDIS_CONNECT_TIMEOUT``, ``..._SOCKET_TIMEOUT``)."""
    s = settings()
    return client_for(
        url or redis_url(),
        socket_connect_timeout=s.redis_connect_timeout_s,
        socket_timeout=s.redis_socket_timeout_s,
        health_check_interval=30,
    )


def kombu_url(url: str) -> str:
    """``url`` spelled for kombu: a Unix socket is ``redis+socket://`` there."""
    if url.startswith("unix://"):
        return "redis+socket://" + url[len("unix://") :]
    return url


def celery_url() -> str:
    """The same Redis spelled for kombu (broker and result backend)."""
    return kombu_url(redis_url())


def ping(url: str) -> None:
    """One PING to ``url``, without redis-py's retries; raise :class:`PoolUnavailable` saying why
    it failed. A command that needs Redis says so in one line at once, before anything it does
    would meet the outage (a producer routing a request reads breakers and quotas there)."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    s = settings()
    client = client_for(
        url,
        socket_connect_timeout=s.redis_connect_timeout_s,
        socket_timeout=s.redis_socket_timeout_s,
        retry=Retry(NoBackoff(), 0),
    )
    try:
        client.ping()
    except redis.TimeoutError:
        why = (
            f"no answer within {s.redis_connect_timeout_s:g} s "
            "(AIPOOL_REDIS_CONNECT_TIMEOUT, AIPOOL_REDIS_SOCKET_TIMEOUT)"
        )
        raise PoolUnavailable(f"cannot reach Redis at {describe_redis(url)}: {why}") from None
    except redis.AuthenticationError:
        # Redis answered: it wants credentials the URL does not carry, or refuses the ones it
        # does (its own words, HELLO's protocol detail, say neither plainly).
        asked = "refused the password in the URL" if _has_password(url) else "requires a password"
        raise PoolUnavailable(
            f"Redis at {describe_redis(url)} {asked}: put the right one in the URL "
            "(redis://:PASSWORD@host:6379/0, or redis://USER:PASSWORD@... for an ACL user)"
        ) from None
    except redis.RedisError as exc:
        why = " ".join(str(exc).split()).rstrip(".") or type(exc).__name__
        raise PoolUnavailable(f"cannot reach Redis at {describe_redis(url)}: {why}") from None
    finally:
        close(client)


def _has_password(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        return bool(urlsplit(url).password)
    except ValueError:
        return False


def close(client: Any) -> None:
    """Close ``client``'s connections, and those it holds to the sentinels, if any."""
    client.close()
    manager = getattr(client.connection_pool, "sentinel_manager", None)
    if manager is not None:
        manager.close()
