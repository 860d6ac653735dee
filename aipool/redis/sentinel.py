"""A Redis behind Sentinel: how its ``sentinel://`` URL is written, and clients that follow its master.

The URL is the one kombu's Sentinel transport and Celery's Sentinel result backend read, so one
``REDIS_URL`` serves the pool's own clients, its broker and its results::

    sentinel://[:password@]host1:26379/0;sentinel://host2:26379/0;sentinel://host3:26379/0

one address per sentinel, separated by ``;``. kombu and Celery take the database and the master's
password from the first address only, so a later address naming another database or password is
refused here rather than ignored there. The master's name (each sentinel's ``sentinel monitor
<name> ...``) is ``AIPOOL_REDIS_SENTINEL_MASTER``; sentinels that ask for a password of their own
(``requirepass`` in their configuration) get ``AIPOOL_REDIS_SENTINEL_PASSWORD``.

Every client built here asks the sentinels where the master is each time it opens a connection
(redis-py's ``SentinelConnectionPool``): after a failover a connection to the old master fails (it
died) or answers ``READONLY`` (it came back as a replica), redis-py drops it, and the next one
goes to the promoted replica. No process restarts. While the sentinels have not yet agreed on a
new master, commands fail with ``MasterNotFoundError`` (a ``ConnectionError``), as they would
against a Redis that is restarting; the pool meets that as it meets a restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

#: The scheme of a Sentinel URL (kombu's and Celery's spelling).
SCHEME = "sentinel"
#: Sentinel's own port, for an address that names none.
DEFAULT_PORT = 26379
#: How a Sentinel URL is written, for messages.
SENTINEL_URL_FORM = "sentinel://[:password@]host1:26379/0;sentinel://host2:26379/0;..."


@dataclass(frozen=True)
class Sentinels:
    """Where the sentinels are, and how the master they name is spoken to."""

    addresses: tuple[tuple[str, int], ...]
    db: int
    username: str | None = None
    password: str | None = None


def is_sentinel(url: str) -> bool:
    """Whether ``url`` names sentinels rather than one Redis server."""
    return url.strip().lower().startswith(f"{SCHEME}://")


def parse(url: str) -> Sentinels:
    """The sentinels ``url`` names; ``ValueError`` saying how such a URL is written."""
    addresses: list[tuple[str, int]] = []
    first: tuple[int | None, str | None, str | None] | None = None
    for chunk in (c.strip() for c in url.split(";")):
        if not chunk:
            continue
        try:
            parts = urlsplit(chunk)
            port = parts.port or DEFAULT_PORT
        except ValueError as exc:
            raise ValueError(
                f"{_hidden(chunk)!r} is not a sentinel address ({exc}); write {SENTINEL_URL_FORM}"
            ) from None
        if parts.scheme.lower() != SCHEME or not parts.hostname:
            raise ValueError(
                f"{_hidden(chunk)!r} is not a sentinel address; write {SENTINEL_URL_FORM}"
            )
        path = parts.path.strip("/")
        if path and not path.isdigit():
            raise ValueError(f"names database {path!r}, not a number; write {SENTINEL_URL_FORM}")
        given = (
            int(path) if path else None,
            unquote(parts.username) if parts.username else None,
            unquote(parts.password) if parts.password is not None else None,
        )
        if first is None:
            first = given
        elif any(g is not None and g != f for g, f in zip(given, first, strict=True)):
            # kombu and Celery would silently use the first address's and ignore this one's.
            raise ValueError(
                "names another database or password than the first sentinel address; kombu and "
                "Celery read them from the first address only: write them there"
            )
        addresses.append((parts.hostname, port))
    if first is None:
        raise ValueError(f"names no sentinel; write {SENTINEL_URL_FORM}")
    db, username, password = first
    return Sentinels(tuple(addresses), db or 0, username, password)


def shown(url: str) -> str:
    """``url`` with the password of every address hidden (kombu's sanitizer hides the first's)."""
    return ";".join(_hidden(chunk) for chunk in url.split(";"))


def _hidden(chunk: str) -> str:
    try:
        parts = urlsplit(chunk)
    except ValueError:  # unreadable: say only what follows any credentials
        return chunk.rpartition("@")[2]
    if parts.password is None:
        return chunk
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:**@{host}").geturl()


def sentinel_kwargs(password: str | None, **options: Any) -> dict[str, Any]:
    """How each sentinel is spoken to: ``options`` (timeouts, retries) and its password, if any.

    Given to redis-py's ``Sentinel`` and, as the ``sentinel_kwargs`` transport option, to kombu
    and Celery (without them redis-py would reuse the master's password on the sentinels)."""
    kwargs = dict(options)
    if password:
        kwargs["password"] = password
    return kwargs


def master_client(
    url: str, master: str, *, sentinel_password: str | None = None, **options: Any
) -> Any:
    """A redis-py client on the master the sentinels of ``url`` name ``master``, following it
    across failovers. ``options`` (timeouts, retry, health checks) apply to the master's
    connections and, socket timeouts and retry, to the sentinels' too."""
    from redis.sentinel import Sentinel

    where = parse(url)
    to_sentinels = {k: v for k, v in options.items() if k.startswith("socket_") or k == "retry"}
    manager = Sentinel(
        list(where.addresses),
        sentinel_kwargs=sentinel_kwargs(sentinel_password, **to_sentinels),
        db=where.db,
        username=where.username,
        password=where.password,
        **options,
    )
    return manager.master_for(master)


def transport_options(master: str, sentinel_password: str | None, **options: Any) -> dict[str, Any]:
    """What kombu's Sentinel transport and Celery's Sentinel result backend need beside the URL:
    the master's name and how to speak to the sentinels."""
    return {"master_name": master, "sentinel_kwargs": sentinel_kwargs(sentinel_password, **options)}


def pool_place(pool: Any) -> tuple[Any, ...]:
    """Which Redis, and which database, a redis-py connection pool reaches: the same tuple for
    two pools on one server (two pools on the master of one set of sentinels are on one
    server, whichever it is now)."""
    kwargs = pool.connection_kwargs
    manager = getattr(pool, "sentinel_manager", None)
    if manager is not None:
        sentinels = sorted(
            (
                s.connection_pool.connection_kwargs.get("host"),
                s.connection_pool.connection_kwargs.get("port"),
            )
            for s in manager.sentinels
        )
        return ("sentinel", pool.service_name, tuple(sentinels), kwargs.get("db"))
    return tuple(kwargs.get(name) for name in ("host", "port", "db", "path"))
