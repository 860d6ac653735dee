"""Which Redis and which ledger a process uses, said for people (passwords hidden).

Every command that reads the pool's state prints these, and a worker's first log line says them,
so nobody reads zeros from the wrong place without knowing it.
"""

from __future__ import annotations

from aipool.redis.sentinel import is_sentinel, shown


def shown_url(url: str) -> str:
    """``url`` with any password hidden, fit for logs and terminals."""
    from kombu.utils.url import maybe_sanitize_url

    if is_sentinel(url):  # one address per sentinel: kombu's sanitizer hides the first only
        return shown(url)
    return str(maybe_sanitize_url(url))


def describe_redis(url: str) -> str:
    """The Redis at ``url``: the URL, and whose embedded server it is when it is one."""
    # deferred: loads aipool.redis.embedded (~41 ms of start-up) only when this runs
    from aipool.redis.embedded import announced_at, is_embedded

    shown = shown_url(url)
    running = announced_at(url)
    if running is not None:
        return f"{shown} ({running.describe()})"
    if is_embedded(url):
        return f"{shown} (embedded Redis)"
    return shown


def describe_database(url: str) -> str:
    """The ledger database at ``url`` (a SQLAlchemy URL), password hidden."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is still worth naming, minus anything after '@'
        return url.rsplit("@", 1)[-1]
