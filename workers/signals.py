"""Worker and beat life-cycle hooks: settings checked before anything starts, scrubbed logs, the
metrics endpoint and the ledger schema."""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Any, NoReturn

from celery.app import trace as celery_trace
from celery.signals import (
    after_setup_logger,
    beat_init,
    import_modules,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
)

from aipool import log_guard
from aipool.errors import NoLogin, PoolUnavailable, SettingsError
from aipool.ledger.db import migrate
from aipool.ledger.outbox import OUTBOX
from aipool.providers.catalog import CATALOG
from aipool.redis.persistence import persistence_warning
from aipool.redis.url import redis_url
from aipool.settings import settings
from aipool.settings.startup import below_adr_notes, check_at_start
from aipool.tracing import setup as tracing_setup
from aipool.views.pool_location import shown_url
from workers.runtime import shared_redis, usage_log

log = logging.getLogger("aipool.workers")

# Celery logs every task's return value at INFO; an answer may quote its prompt, and the pool keeps
# no prompt text in logs. The line keeps the task, its id and its run time.
celery_trace.LOG_SUCCESS = "Task %(name)s[%(id)s] succeeded in %(runtime)ss"


def _scrub_every_record(**_: Any) -> None:
    # Every record the worker or beat (and the worker's pool children, which inherit it) makes is
    # scrubbed as it is made, whichever logger makes it and whichever handler writes it
    # (aipool/log_guard.py). import_modules comes before logging is set up and before the first
    # record; a producer importing the app keeps its own logging as it is.
    log_guard.install()


#: Libraries that log every provider call at INFO: httpx's "HTTP Request: POST ... 200 OK" (the
#: Ollama, OpenAI and Anthropic SDKs' transport). At INFO the hop's own line already says which
#: provider answered, how and how fast, so this was a second line per call (15 µs of CPU each in
#: a hot loop; no end-to-end effect measurable, docs/benchmarks.md). Their warnings still show,
#: and at DEBUG every line does.
PER_CALL_LOGGERS = ("httpx",)


def _quiet_per_call_logs(loglevel: Any = None, **_: Any) -> None:
    level = logging.getLevelName(loglevel) if isinstance(loglevel, str) else loglevel
    if isinstance(level, int) and level > logging.DEBUG:
        for name in PER_CALL_LOGGERS:
            logging.getLogger(name).setLevel(max(level, logging.WARNING))


def _refuse_invalid_settings(**_: Any) -> None:
    # A worker and beat send import_modules before any other start-up signal, before logging is
    # set up. Celery logs and swallows what a signal handler raises; SystemExit is not swallowed,
    # so the process stops here with one line naming every offending variable and file key,
    # instead of serving with a limit that does not apply.
    try:
        check_at_start()
        tracing_setup.check_installed()
    except SettingsError as exc:
        _refuse_to_start(exc)


def _no_sent_events_from_beat(sender: Any = None, **_: Any) -> None:
    # Beat sends only the pool's routines, which send no task events either (tasks.maintenance):
    # a task-sent event alone would leave each run PENDING in Flower's task list for ever.
    app = getattr(sender, "app", None)
    if app is not None:
        app.conf.task_send_sent_event = False


def _note_limits_below_adr(**_: Any) -> None:
    # Once per worker or beat (the parent), once logging is set up.
    for note in below_adr_notes(settings()):
        log.warning(note)


def _warn_if_redis_keeps_nothing(**_: Any) -> None:
    # Once per worker (the parent): queued requests and undrained usage records wait in Redis.
    try:
        warning = persistence_warning(shared_redis(), shown_url(redis_url()))
    except Exception:
        log.debug("Redis persistence not checked", exc_info=True)
        return
    if warning:
        log.warning(warning)


def _import_provider_sdks(sender: Any = None, **_: Any) -> None:
    # Importing an SDK takes seconds (all four: 10 s on a busy machine). Imported in the parent
    # before it forks, every pool child, and every replacement of a killed one, starts with it;
    # only the SDKs of the queues this worker serves, so an Ollama worker holds no cloud SDK.
    # Clients are still built in each child (sockets must not cross a fork).
    serving = _consumed_queues(sender)
    for provider, facts in CATALOG.items():
        if provider in serving:
            importlib.import_module(facts.adapter.partition(":")[0])


def _consumed_queues(sender: Any) -> set[str]:
    queues = getattr(getattr(getattr(sender, "app", None), "amqp", None), "queues", None)
    return set(getattr(queues, "consume_from", None) or {})


def _start_metrics_server(sender: Any = None, **_: Any) -> None:
    # Started in the parent before it forks, over a multiprocess registry: a server started in
    # each child would show one child's numbers only. Without the directory there is no endpoint.
    # Without a token (and without AIPOOL_ALLOW_ANONYMOUS=1), or without its port, the worker
    # does not start: one line says why (Celery swallows what a handler raises, not SystemExit).
    directory = settings().prometheus_multiproc_dir
    if not directory:
        return
    # deferred: loads prometheus-client, rich, httpx (~237 ms of start-up) only when this runs
    from aipool.metrics import endpoint

    try:
        token = endpoint.metrics_token()
    except NoLogin as exc:
        _refuse_to_start(exc)
    shutil.rmtree(directory, ignore_errors=True)
    Path(directory).mkdir(parents=True, exist_ok=True)
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    from aipool.metrics.pool_state import collectors_for

    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    # Queues consumed, and on the maintenance worker the pool's shared state, read at scrape time.
    for collector in collectors_for(getattr(sender, "app", None), _consumed_queues(sender)):
        registry.register(collector)
    host, port = settings().metrics_host, settings().metrics_port
    try:
        endpoint.serve(registry, host, port, token)
    except PoolUnavailable as exc:
        _refuse_to_start(
            f"{endpoint.SERVER} {exc} (AIPOOL_METRICS_HOST={host}, AIPOOL_METRICS_PORT={port})"
        )
    _serving.append(endpoint.serving_line(host, port, token))


def _refuse_to_start(why: object) -> NoReturn:
    print(f"aipool: {why}", file=sys.stderr, flush=True)
    raise SystemExit(1) from None


#: The line saying where this worker serves its metrics and whether they ask for a login, once it
#: does (never the token). worker_init comes before Celery sets up logging, so the line waits for
#: worker_ready: said then, it reaches the log.
_serving: list[str] = []


def _say_metrics_port(**_: Any) -> None:
    for line in _serving:
        log.info("%s", line)


def _forget_process_metrics(pid: int | None = None, **_: Any) -> None:
    if settings().prometheus_multiproc_dir:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


def _start_tracing(**_: Any) -> None:
    # In each pool process, after the fork: a span exporter's thread does not survive one. Off
    # (no AIPOOL_OTLP_ENDPOINT, no AIPOOL_TRACE_FILE), nothing is loaded (aipool/tracing).
    try:
        tracing_setup.configure("worker", redis_client=shared_redis())
    except Exception:
        log.exception("tracing not started in this process; it serves untraced")


def _flush_spans(**_: Any) -> None:
    # The process's last spans go before it ends (the exporter's batch would be lost).
    try:
        tracing_setup.flush()
    except Exception:
        log.debug("spans not flushed", exc_info=True)


def _migrate_ledger(**_: Any) -> None:
    # Every worker may try: migrations run under an advisory lock and are a no-op when current.
    # A database that is down must not keep a worker from serving: usage waits in Redis.

    try:
        migrate()
    except Exception:
        log.exception("ledger migration failed; usage records wait in Redis until it succeeds")


def _hold_usage_records(**_: Any) -> None:
    # The hop's ledger record rides with the task's result write (aipool.ledger.outbox).
    OUTBOX.task_started()


def _push_held_usage_records(**_: Any) -> None:
    # Sent after the result is written and before the message is acknowledged: what no result
    # write took (a forwarding hop's skips and failures) is pushed now, so it is in Redis before
    # the broker forgets the message.
    left = OUTBOX.task_ended()
    if left:
        usage_log().push(left)


def connect() -> None:
    """Register the worker's and beat's life-cycle hooks (``workers.app`` calls it once)."""
    import_modules.connect(_scrub_every_record)
    import_modules.connect(_refuse_invalid_settings)
    after_setup_logger.connect(_quiet_per_call_logs)
    beat_init.connect(_no_sent_events_from_beat)
    worker_ready.connect(_note_limits_below_adr)
    beat_init.connect(_note_limits_below_adr)
    worker_ready.connect(_warn_if_redis_keeps_nothing)
    worker_init.connect(_import_provider_sdks)
    worker_init.connect(_start_metrics_server)
    worker_ready.connect(_say_metrics_port)
    worker_process_shutdown.connect(_forget_process_metrics)
    worker_process_init.connect(_start_tracing)
    worker_process_shutdown.connect(_flush_spans)
    worker_ready.connect(_migrate_ledger)
    task_prerun.connect(_hold_usage_records)
    task_postrun.connect(_push_held_usage_records)
