"""``aipool worker``: the pool's workers on one machine, one process group per class of queue.

A single ``celery worker -Q router,ollama,...`` shares one set of processes among every queue: when
Ollama is slow, its calls hold every process, and routing, the paid providers and urgent requests
wait behind them (issue #29). This command starts one ``celery worker`` per class of queue
(:data:`aipool.lanes.WORKER_CLASSES`), each with processes of its own, and stops them all on
Ctrl-C or SIGTERM; each worker logs to a file of its own in ``--log-dir`` (``urgent.log``,
``local.log``...), its node named after its class (``urgent@host``). Compose and Kubernetes run the same classes, or one
worker per queue and lane, as separate containers.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from aipool.children import Child, signals_end_the_command
from aipool.cli.console import console as make_console
from aipool.cli.worker_news import LogNews
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
) -> None:
    """Run the pool's workers until Ctrl-C: one per class of queue (urgent lanes, routing,
    local models, paid providers), so a slow local model cannot starve the rest."""

    console = make_console()
    ready_to_start(console)
    log_dir.mkdir(parents=True, exist_ok=True)
    children: list[Child] = []
    news: list[LogNews] = []
    with signals_end_the_command():
        try:
            for name, (queues, processes) in WORKER_CLASSES.items():
                log_path = log_dir / f"{name}.log"
                watch = LogNews(name, log_path)
                watch.skip_existing()
                news.append(watch)
                argv = worker_argv(name, queues, processes, loglevel)
                children.append(Child(name, argv, log_path=log_path))
                console.print(
                    f"{name}: {processes} process(es) on {', '.join(queues)} (log {log_path})",
                    highlight=False,
                    soft_wrap=True,
                )
            while all(child.alive() for child in children):
                _tell(console, news)
                time.sleep(0.5)
            _tell(console, news)
            for child, watch in zip(children, news, strict=True):
                if not child.alive():
                    console.print(
                        f"[red]worker {child.name} stopped: {watch.why_stopped()}[/]",
                        highlight=False,
                        soft_wrap=True,
                    )
            console.print("[red]stopping the others[/]", highlight=False)
            raise typer.Exit(1)
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            # Every worker is told at once, so they drain side by side (each finishes the calls
            # it holds); then each is waited for, and killed if it outlasts its grace.
            for child in children:
                child.terminate()
            for child in children:
                child.stop()


def ready_to_start(console: Console) -> None:
    """What every worker would find wrong at start, found once, before any starts, and said in
    one line: refused settings, the route or price table (``SettingsError``), no Redis or one that
    does not answer (``PoolUnavailable``: nothing can be served without it, so nothing starts; a
    supervisor restarts the command). A ledger that cannot be reached is said, and the workers
    start: they serve and hold usage records in Redis until it is back."""
    from aipool.cli.pool import ledger_url, redis_url
    from aipool.settings.startup import check_at_start
    from aipool.views.pool_location import describe_database

    check_at_start()
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


def _tell(console: Console, news: Sequence[LogNews]) -> None:
    for watch in news:
        for line in watch.read():
            console.print(line, highlight=False, soft_wrap=True, markup=False)


def register(app: typer.Typer) -> None:
    app.command("worker")(run_workers)
