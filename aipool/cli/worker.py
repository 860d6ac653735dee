"""``aipool worker``: the pool's workers on one machine, one process group per class of queue.

A single ``celery worker -Q router,ollama,...`` shares one set of processes among every queue: when
Ollama is slow, its calls hold every process, and routing, the paid providers and urgent requests
wait behind them (issue #29). This command starts one ``celery worker`` per class of queue
(:data:`aipool.lanes.WORKER_CLASSES`), each with processes of its own, and stops them all on
Ctrl-C or SIGTERM; a class whose worker dies is started again alone, a bounded number of times
(:mod:`aipool.cli.worker_restarts`); each worker logs to a file of its own in ``--log-dir`` (``urgent.log``,
``local.log``...), its node named after its class (``urgent@host``). Compose and Kubernetes run the same classes, or one
worker per queue and lane, as separate containers.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from aipool.children import STOP_GRACE_S, Child, signals_end_the_command
from aipool.cli.console import console as make_console
from aipool.cli.worker_news import LogNews
from aipool.cli.worker_restarts import MAX_RESTARTS, WINDOW_S, RestartBudget
from aipool.lanes import WORKER_CLASSES


def worker_argv(
    name: str,
    queues: Sequence[str],
    processes: int,
    loglevel: str,
    *,
    app: str = "workers.app",
    host: str = "%h",
    without: Sequence[str] = (),
) -> list[str]:
    """The ``celery worker`` command of one pool worker, node ``name@host``, serving ``queues``
    with ``processes`` pool processes; ``app`` is the Celery app module (a harness may run
    another).

    Every way the pool starts a worker builds its command here: this command's classes, the
    demo's lone worker and the harnesses' (:class:`aipool.harness.worker.Worker`). ``without``
    names Celery's cluster chatter a worker skips (``gossip``, ``mingle``, ``heartbeat``): a worker
    with no siblings to hear from starts about a second sooner without mingle.
    """
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "-Q",
        ",".join(queues),
        "-c",
        str(processes),
        "-n",
        f"{name}@{host}",
        "-O",
        "fair",
        "-l",
        loglevel,
        *(f"--without-{chatter}" for chatter in without),
    ]


def run_workers(
    log_dir: Annotated[
        Path, typer.Option(help="Directory for the workers' logs, one file per class.")
    ] = Path("var/log"),
    loglevel: Annotated[str, typer.Option("--loglevel", "-l", help="Celery's log level.")] = "INFO",
    max_restarts: Annotated[
        int,
        typer.Option(
            min=0,
            help="Times a class of worker that died is started again within --restart-window "
            "before every worker is stopped.",
        ),
    ] = MAX_RESTARTS,
    restart_window: Annotated[
        float, typer.Option(min=1.0, help="Seconds the restarts of one class are counted in.")
    ] = WINDOW_S,
) -> None:
    """Run the pool's workers until Ctrl-C: one per class of queue (urgent lanes, routing,
    local models, paid providers), so a slow local model cannot starve the rest. A class that
    dies is started again, the others untouched, up to --max-restarts times in --restart-window."""

    console = make_console()
    ready_to_start(console)
    log_dir.mkdir(parents=True, exist_ok=True)
    children: dict[str, Child] = {}
    news: dict[str, LogNews] = {}
    argvs: dict[str, list[str]] = {}
    envs: dict[str, dict[str, str] | None] = {}
    budgets = {name: RestartBudget(max_restarts, restart_window) for name in WORKER_CLASSES}
    password = broker_has_password()  # one broker for every class
    with signals_end_the_command():
        try:
            for index, (name, (queues, processes)) in enumerate(WORKER_CLASSES.items()):
                log_path = log_dir / f"{name}.log"
                watch = LogNews(name, log_path, password=password)
                watch.skip_existing()
                news[name] = watch
                argvs[name] = worker_argv(name, queues, processes, loglevel)
                env, metrics = class_metrics(name, index)
                envs[name] = env
                children[name] = Child(name, argvs[name], log_path=log_path, env=env)
                console.print(
                    f"{name}: {processes} process(es) on {', '.join(queues)} (log {log_path}"
                    f"{metrics})",
                    highlight=False,
                    soft_wrap=True,
                )
            while True:
                _tell(console, news.values())
                dead = [name for name, child in children.items() if not child.alive()]
                for name in dead:
                    if not _start_again(
                        console, name, children, news[name], argvs[name], budgets, envs[name]
                    ):
                        console.print("[red]stopping the others[/]", highlight=False)
                        raise typer.Exit(1)
                time.sleep(0.5)
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            # Every worker is told at once, so they drain side by side (each finishes the calls
            # it holds); then each is waited for until one shared deadline, and killed if it
            # outlasts it. One grace for all, not one each: a worker whose Redis is gone never
            # ends its warm shutdown, and five graces in a row outlast a supervisor's (30 s in
            # Kubernetes), whose SIGKILL of this command then left the last classes running.
            for child in children.values():
                child.terminate()
            deadline = time.monotonic() + STOP_GRACE_S
            for child in children.values():
                child.stop(grace_s=max(0.1, deadline - time.monotonic()))


def broker_has_password() -> bool:
    """Whether the workers' broker URL carries a password (what the terminal may say of it)."""
    from urllib.parse import urlsplit

    # deferred: `aipool` imports every command at start; these load pydantic-settings
    from aipool.redis.url import celery_url
    from aipool.settings import settings

    url = settings().celery_broker_url or celery_url()
    try:
        return bool(urlsplit(url).password)
    except ValueError:
        return True  # unreadable: keep whatever is masked masked


def class_metrics(name: str, index: int) -> tuple[dict[str, str] | None, str]:
    """The environment of class ``name`` (the ``index``-th) when the workers serve metrics
    (``PROMETHEUS_MULTIPROC_DIR`` set), and what its line says of them.

    A worker's parent empties its metrics directory when it starts and serves ``/metrics`` on
    ``AIPOOL_METRICS_PORT``: classes run side by side here would wipe each other's samples, and
    all but one would fail to take the port. Each class gets a directory of its own under the
    one given and the port after the previous class's. ``None``: the command's own environment.
    """
    # deferred: `aipool` imports every command at start; settings load pydantic-settings
    from aipool.metrics.endpoint import TOKEN as METRICS_TOKEN
    from aipool.settings import settings
    from aipool.settings.model import EVERY_INTERFACE
    from aipool.views.http_server import address

    s = settings()
    if not s.prometheus_multiproc_dir:
        return None, ""
    port = s.metrics_port + index
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(s.prometheus_multiproc_dir / name),
        "AIPOOL_METRICS_PORT": str(port),
    }
    # Said as each worker's log says it (aipool.metrics.endpoint): a scrape without the token
    # gets 401, so whoever reads this screen should know one is asked for.
    login = " (login required)" if s.secret(METRICS_TOKEN) else " WITHOUT a login"
    # Every interface is said as the port alone; an address given (AIPOOL_METRICS_HOST) is named.
    where = f":{port}" if s.metrics_host == EVERY_INTERFACE else address(s.metrics_host, port)
    return env, f"; metrics on {where}/metrics{login}"


def _start_again(
    console: Console,
    name: str,
    children: dict[str, Child],
    watch: LogNews,
    argv: list[str],
    budgets: dict[str, RestartBudget],
    env: dict[str, str] | None = None,
) -> bool:
    """Start the dead worker ``name`` again if its budget allows, saying so on the terminal and
    in its log; False (said too) when it has used its restarts."""
    child = children[name]
    why = f"{_exit(child.process.returncode)}; {watch.why_stopped()}"
    # Its pool processes may outlive the worker's main process: none serves a second copy.
    child.stop(grace_s=2.0)
    budget = budgets[name]
    window = _duration(budget.window_s)
    if not budget.take(time.monotonic()):
        said = (
            f"worker {name} stopped ({why}): it was started again {budget.used} time(s) "
            f"within {window} already"
        )
        _log(watch, "ERROR", said)
        console.print(f"[red]{said}[/]", highlight=False, soft_wrap=True)
        return False
    said = (
        f"worker {name} stopped ({why}): starting it again, the others untouched "
        f"(restart {budget.used} of {budget.limit} within {window})"
    )
    _log(watch, "WARNING", said)
    console.print(f"[yellow]{said}[/]", highlight=False, soft_wrap=True)
    watch.read()  # past the line just written, and what the dead worker left
    watch.last_error = ""
    watch.outage = False
    children[name] = Child(name, argv, log_path=watch.path, env=env)
    return True


def _exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def _log(watch: LogNews, level: str, said: str) -> None:
    """Add ``said`` to the worker's own log, in Celery's line format, for whoever reads it later
    (a WARNING line is not relayed again; an ERROR line is the reason said at the end)."""
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    with watch.path.open("a", encoding="utf-8") as log:
        log.write(f"[{stamp}: {level}/aipool worker] {said}\n")


def ready_to_start(console: Console) -> None:
    """What every worker would find wrong at start, found once, before any starts, and said in
    one line: refused settings, the route or price table (``SettingsError``), metrics on without
    the token they ask for (``NoLogin``), no Redis or one that does not answer
    (``PoolUnavailable``: nothing can be served without it, so nothing starts; a supervisor
    restarts the command). A ledger that cannot be reached is said, and the workers start: they
    serve and hold usage records in Redis until it is back."""
    from aipool.cli.pool import ledger_url, redis_url
    from aipool.settings import settings
    from aipool.settings.startup import check_at_start
    from aipool.views.pool_location import describe_database

    check_at_start()
    if settings().prometheus_multiproc_dir:
        from aipool.metrics.endpoint import metrics_token

        metrics_token()  # every class inherits this environment, the token with it
    redis_url()
    ledger = ledger_url()
    problem = ledger_problem(ledger)
    if problem:
        console.print(
            f"[yellow]aipool: the ledger at {describe_database(ledger)} cannot be reached now "
            f"({problem}): the workers start and hold usage records in Redis until it answers[/]",
            highlight=False,
            soft_wrap=True,
        )


def ledger_problem(url: str) -> str | None:
    """Why the ledger at ``url`` cannot be opened now, or ``None`` when it can."""
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    from aipool.ledger.db import make_engine

    try:
        engine = make_engine(url)
    except (SQLAlchemyError, ValueError) as exc:
        return " ".join(str(exc).split())[:200]
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        original = getattr(exc, "orig", None) or exc
        return " ".join(str(original).split())[:200]
    finally:
        engine.dispose()
    return None


def _tell(console: Console, news: Iterable[LogNews]) -> None:
    for watch in news:
        for line in watch.read():
            console.print(line, highlight=False, soft_wrap=True, markup=False)


def register(app: typer.Typer) -> None:
    app.command("worker")(run_workers)
