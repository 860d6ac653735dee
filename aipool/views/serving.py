"""How the pool's own servers show themselves: Flower (task dashboard) and the usage report
(``aipool status --serve``).

Both show what the pool does (tasks and their results, breakers, quotas, cost) to whoever reaches
them, so by default each

- refuses to start without a login (Flower: ``FLOWER_BASIC_AUTH`` or ``FLOWER_AUTH``; the report:
  ``AIPOOL_HEALTH_TOKEN``), unless ``AIPOOL_ALLOW_ANONYMOUS=1`` says serving anyone is meant;
- listens on loopback unless an address is given (compose and Kubernetes give ``0.0.0.0``
  explicitly: their ports are published on loopback, or reached through a NetworkPolicy);
- says the address it serves on stderr, and whether it asks for a login.
"""

from __future__ import annotations

import sys

from aipool.errors import NoLogin
from aipool.settings import settings

#: Where a server listens when no address is given.
LOOPBACK = "127.0.0.1"
#: The setting that lets a server run without a login.
ALLOW_ANONYMOUS = "AIPOOL_ALLOW_ANONYMOUS"


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


def announcement(server: str, url: str, login: bool) -> str:
    """The line saying where ``server`` serves and whether it asks for a login."""
    if login:
        return f"aipool: {server} serving on {url} (login required)"
    return f"aipool: {server} serving on {url} WITHOUT a login ({ALLOW_ANONYMOUS}=1)"


def announce(server: str, url: str, login: bool) -> None:
    """Write :func:`announcement` to stderr (the log of a container or a terminal), before the
    server's own logging is set up."""
    print(announcement(server, url, login), file=sys.stderr, flush=True)
