"""Flower, as the pool runs it (``celery -A workers.app flower``): with a login, on loopback unless
told otherwise, its address said at start.

Flower 2.2 with no login serves every page (tasks, their arguments and results) to anyone, and
listens on every interface; only its ``/api/*`` asks for a login. Celery loads the ``-A`` app
inside its command group, once it knows the subcommand and before Flower reads its options, so
the app applies the pool's defaults here (:mod:`aipool.views.serving`): no ``FLOWER_BASIC_AUTH`` (or
``FLOWER_AUTH``) and no ``AIPOOL_ALLOW_ANONYMOUS=1`` stops it in one line; no ``--address`` and no
``FLOWER_ADDRESS`` means ``FLOWER_ADDRESS=127.0.0.1``, which Flower then reads from the
environment like any of its ``FLOWER_*`` options.

Flower's ``/metrics`` (task names, worker names, counts) answers only its login or the workers'
metrics token (``AIPOOL_METRICS_TOKEN``, which Prometheus scrapes every worker with), as every
other page answers only the login (:func:`guard_metrics`); Flower 2.2 serves it to anyone. Only
``/healthcheck`` (the probes') stays open.

Flower shows no answers unless ``AIPOOL_FLOWER_SHOWS_ANSWERS=1``: the workers withhold them from
their task events (``workers.messages``), and Flower gets no result backend
(:func:`withhold_answers`), so its ``/api/task/result`` cannot read them from Redis either.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import MutableMapping, Sequence

import click
from celery import Celery

from aipool.errors import PoolUnavailable
from aipool.metrics.endpoint import TOKEN as METRICS_TOKEN
from aipool.settings import settings
from aipool.views.serving import LOOPBACK, announce, bearer_matches, require_login

#: Flower's port when none is given (Flower's own default).
DEFAULT_PORT = "5555"


def running_flower() -> bool:
    """Whether this process is ``celery ... flower`` (asked of Celery's command line, which is
    loading the app when this runs)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.invoked_subcommand == "flower"


#: Celery's result backend that stores and reads nothing.
DISABLED_BACKEND = "celery.backends.base:DisabledBackend"


def withhold_answers(app: Celery) -> None:
    """Give the Flower about to start no result backend, unless answers may be shown: its
    ``/api/task/result`` then answers 503 instead of reading an answer from Redis.

    Through the loader's backend aliases, as ``workers.result_backend`` installs the pool's own:
    Celery reads ``CELERY_RESULT_BACKEND`` from the environment over any setting, so setting
    ``result_backend`` would not hold where a deployment sets that variable.
    """
    if not settings().flower_shows_answers:
        app.loader.override_backends = {
            **app.loader.override_backends,
            **dict.fromkeys(("redis", "rediss", "sentinel"), DISABLED_BACKEND),
        }


def guard_metrics() -> None:
    """Serve the Flower about to start's ``/metrics`` only to its login (basic or OAuth, as its
    pages) or to ``Authorization: Bearer`` the workers' metrics token, when one is set.

    Flower builds its application from the list :data:`flower.urls.handlers` after the app is
    loaded, so the metrics' entry is replaced there by a subclass that checks first.
    """
    import tornado.web
    from flower import urls
    from flower.views.monitor import Metrics

    token = settings().secret(METRICS_TOKEN) or None

    class GuardedMetrics(Metrics):  # type: ignore[misc]  # Flower ships no types
        def prepare(self) -> None:
            if token and bearer_matches(self.request.headers.get("Authorization", ""), token):
                return
            # Flower's own check: raises 401 for a wrong or missing basic login; None for OAuth
            # without a session; True when Flower has no login at all (anonymity asked for).
            if not self.current_user:
                raise tornado.web.HTTPError(401)

    found = [i for i, e in enumerate(urls.handlers) if isinstance(e, tuple) and e[1] is Metrics]
    if len(found) != 1:
        # A Flower that lists its metrics differently would serve them to anyone: refuse to start.
        raise PoolUnavailable(
            "Flower's /metrics is not where this pool guards it: see workers/flower.py"
        )
    entry = urls.handlers[found[0]]
    urls.handlers[found[0]] = (entry[0], GuardedMetrics, *entry[2:])


#: How long Flower may take to exit once its loop has stopped (SIGTERM, Ctrl-C) before it is made
#: to: Flower itself has nothing to finish that takes longer.
EXIT_GRACE_S = 5.0


def exit_promptly() -> None:
    """Have the Flower about to start exit within :data:`EXIT_GRACE_S` of its loop stopping.

    Flower stops on SIGTERM or Ctrl-C by leaving its loop, and Python then joins the threads of
    Flower's executor before the process ends. One of them asks every worker to send events
    every 5 s (``Control.enable_events``), and with the broker gone that call retries the
    connection as long as the pool's workers do (``broker_connection_max_retries = None``): Flower
    stayed up after SIGTERM until its supervisor killed it, the pod's whole grace period. A timer
    started when the loop stops ends the process if it is still there :data:`EXIT_GRACE_S` later.
    """
    from flower.app import Flower

    start = Flower.start

    def start_and_exit_promptly(self: Flower) -> None:
        try:
            start(self)
        finally:
            timer = threading.Timer(EXIT_GRACE_S, _exit_now)
            timer.daemon = True
            timer.start()

    Flower.start = start_and_exit_promptly


def _exit_now() -> None:
    print(
        "aipool: Flower is exiting without waiting for the broker, which does not answer",
        file=sys.stderr,
        flush=True,
    )
    os._exit(0)


def _options(argv: Sequence[str]) -> dict[str, str]:
    """Flower's ``--name=value`` options on the command line (tornado takes only that form)."""
    after = list(argv)[list(argv).index("flower") + 1 :] if "flower" in argv else []
    found = {}
    for arg in after:
        if arg.startswith("--") and "=" in arg:
            name, _, value = arg[2:].partition("=")
            found[name.replace("-", "_")] = value
    return found


def secure_defaults(argv: Sequence[str], environ: MutableMapping[str, str]) -> str:
    """Apply the pool's defaults to the Flower about to start from ``argv`` and ``environ``;
    return the address it will serve. Raises :class:`~aipool.errors.NoLogin` when it has no
    login and anonymous access was not asked for."""
    options = _options(argv)
    given = (environ.get("FLOWER_BASIC_AUTH"), environ.get("FLOWER_AUTH"))
    has_login = any(given) or bool(options.get("basic_auth") or options.get("auth"))
    login = require_login(
        "Flower",
        has_login,
        "set FLOWER_BASIC_AUTH=user:password in its environment (or FLOWER_AUTH for OAuth)",
    )
    address = options.get("address") or environ.get("FLOWER_ADDRESS")
    if not address:
        address = environ["FLOWER_ADDRESS"] = LOOPBACK
    port = options.get("port") or environ.get("FLOWER_PORT") or DEFAULT_PORT
    can_listen(address, port)
    url = f"http://{address}:{port}/"
    announce("Flower", url, login)
    return url


def can_listen(address: str, port: str) -> None:
    """Raise :class:`~aipool.errors.PoolUnavailable` saying why Flower could not listen on
    ``address:port`` (a port in use, an address not on this host): Flower would otherwise fail
    with tornado's traceback after its start-up lines."""
    import socket

    try:
        number = int(port)
        infos = socket.getaddrinfo(address, number, type=socket.SOCK_STREAM)
        family, kind, proto, _, where = infos[0]
        with socket.socket(family, kind, proto) as probe:
            # Flower's own server sets SO_REUSEADDR (tornado): a port in TIME_WAIT is usable.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(where)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc)
        raise PoolUnavailable(f"Flower cannot listen on {address}:{port}: {why}") from None
