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

from aipool.children import Child, signals_end_the_command
from aipool.cli.console import console as make_console
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
    log_dir.mkdir(parents=True, exist_ok=True)
    children: list[Child] = []
    with signals_end_the_command():
        try:
            for name, (queues, processes) in WORKER_CLASSES.items():
                log_path = log_dir / f"{name}.log"
                argv = worker_argv(name, queues, processes, loglevel)
                children.append(Child(name, argv, log_path=log_path))
                console.print(
                    f"{name}: {processes} process(es) on {', '.join(queues)} (log {log_path})",
                    highlight=False,
                    soft_wrap=True,
                )
            while all(child.alive() for child in children):
                time.sleep(0.5)
            stopped = [child.name for child in children if not child.alive()]
            console.print(f"[red]worker {', '.join(stopped)} stopped: stopping the others")
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


def register(app: typer.Typer) -> None:
    app.command("worker")(run_workers)
