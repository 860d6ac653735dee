"""How the pool's own servers show themselves: Flower (task dashboard), the usage report
(``aipool status --serve``) and each worker's metrics (``AIPOOL_METRICS_PORT``).

All show what the pool does (tasks and their results, breakers, quotas, cost, spend per service)
to whoever reaches them, so by default each

- refuses to start without a login (Flower: ``FLOWER_BASIC_AUTH`` or ``FLOWER_AUTH``; the report:
  ``AIPOOL_HEALTH_TOKEN``; the metrics: ``AIPOOL_METRICS_TOKEN``), unless
  ``AIPOOL_ALLOW_ANONYMOUS=1`` says serving anyone is meant;
- listens on loopback unless an address is given (compose and Kubernetes give ``0.0.0.0``
  explicitly: their ports are published on loopback, or reached through a NetworkPolicy). A
  worker's metrics listen on every interface, as they always have: Prometheus scrapes them from
  outside the worker's container, with the token;
- says the address it serves on, and whether it asks for a login.

The report and the metrics ask for a bearer token (:func:`required_token`), checked here for both
(:func:`bearer_accepted`).
"""

from __future__ import annotations

import hmac
import sys
from typing import Any

from aipool.errors import NoLogin
from aipool.settings import settings

#: Where a server listens when no address is given.
LOOPBACK = "127.0.0.1"
#: The setting that lets a server run without a login.
ALLOW_ANONYMOUS = "AIPOOL_ALLOW_ANONYMOUS"
#: The header a server asking for a bearer token answers a request without it with (401).
BEARER_CHALLENGE = ("WWW-Authenticate", 'Bearer realm="aipool"')


def require_login(server: str, has_login: bool, how: str) -> bool:
    """Return whether ``server`` asks for a login; raise :class:`NoLogin` when it has none and
    ``AIPOOL_ALLOW_ANONYMOUS=1`` is not set. ``how`` says how to give it one."""
    if has_login:
        return True
    if settings().allow_anonymous:
        return False
    raise NoLogin(
        f"{server} has no login and would serve the pool to anyone who reaches it: {how}, "
        f"or set {ALLOW_ANONYMOUS}=1 to serve it without one"
    )


def required_token(server: str, name: str) -> str | None:
    """The bearer token ``server`` asks for, the secret ``name`` (the variable, ``<name>_FILE`` or
    the mounted secret file); raises :class:`NoLogin` when none is set, unless
    ``AIPOOL_ALLOW_ANONYMOUS=1`` (then ``None``: served to anyone)."""
    token = settings().secret(name)
    require_login(
        server, bool(token), f"set {name} (or {name}_FILE) to the bearer token it asks for"
    )
    return token or None


def bearer_accepted(environ: dict[str, Any], token: str | None) -> bool:
    """Whether the WSGI request ``environ`` may be answered: it carries
    ``Authorization: Bearer <token>`` (compared in constant time), or no ``token`` is asked for."""
    return bearer_matches(str(environ.get("HTTP_AUTHORIZATION", "")), token)


def bearer_matches(authorization: str, token: str | None) -> bool:
    """Whether the ``Authorization`` header's value is ``Bearer <token>`` (compared in constant
    time), or no ``token`` is asked for."""
    if not token:
        return True
    return hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode())


def announcement(server: str, url: str, login: bool) -> str:
    """The line saying where ``server`` serves and whether it asks for a login."""
    if login:
        return f"aipool: {server} serving on {url} (login required)"
    return f"aipool: {server} serving on {url} WITHOUT a login ({ALLOW_ANONYMOUS}=1)"


def announce(server: str, url: str, login: bool) -> None:
    """Write :func:`announcement` to stderr (the log of a container or a terminal), before the
    server's own logging is set up."""
    print(announcement(server, url, login), file=sys.stderr, flush=True)
