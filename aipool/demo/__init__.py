"""``aipool demo``: ADR-006's story on one machine, against simulated providers, in about a minute.

It starts, in a fresh data directory of its own: an embedded Redis, the loopback provider
simulators, a loopback alert channel and a real ``celery worker`` serving every queue. Then it
tells the story (:mod:`aipool.demo.story`): routing, an Ollama outage with its breaker opening
and closing, Gemini's quota running out, tool calls and their refusal, the static answer, the
budget alert firing once, a repeated question answered from the response cache with what it
saved. Every process traces into ``trace-all.jsonl`` (the console exporter, one span a line), and
the trace of the first request that failed over is written to ``failover-trace.jsonl`` beside the
report. At the end it drains the ledger, checks that it adds up, writes a
Markdown and JSON report and a PNG chart to the folder it names, and stops everything it started,
also on Ctrl-C, SIGTERM or a failed step. Exit code 0 when every step behaved as the story says,
1 otherwise. It never talks to a real provider and never touches a Redis or database of the
caller's: ``REDIS_URL`` and ``DATABASE_URL`` are ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.rule import Rule
from rich.table import Table

from aipool.children import Child, signals_end_the_command, wait_until
from aipool.cli.worker import worker_argv
from aipool.demo.settings import (
    BASE_URL_ENV,
    CACHE_SECRET,
    KEYS,
    SHORTENED,
    TRACE_BATCH_MS,
    cached_routes,
    inherited,
)
from aipool.redis.embedded import EmbeddedRedis

#: Seconds the worker has to answer a ping after it was started (importing the SDKs is slow).
WORKER_START_S = 90.0
#: Seconds the worker has to deliver the breaker alerts to the channel at the end.
ALERT_DELIVERY_S = 10.0
#: Marks every process the demo starts (tests look for leftovers by it).
DEMO_DIR_ENV = "AIPOOL_DEMO_DIR"


#: The widest a section's rule is drawn: outside a terminal the console is as wide as any table
#: needs (aipool/cli/console.py), and a rule across it read as a 1,000-character line in a log.
RULE_WIDTH = 100


def section(console: Console, title: str) -> None:
    """Start a section of the demo's output: ``title`` in a rule as wide as the terminal, at
    most :data:`RULE_WIDTH`."""
    console.print(Rule(title), width=min(console.width, RULE_WIDTH))


def _environment(data_dir: Path, out: Path) -> None:
    for name in [n for n in os.environ if not inherited(n)]:
        del os.environ[name]
    for s in SHORTENED:
        os.environ[s.env] = s.value
    os.environ.update(KEYS)
    os.environ[DEMO_DIR_ENV] = str(data_dir)
    # The response cache on for one service, and every process tracing into one file.
    from aipool.routing.table import DEFAULT_ROUTES_FILE

    routes = data_dir / "routes.toml"
    routes.write_text(cached_routes(DEFAULT_ROUTES_FILE.read_text(encoding="utf-8")), "utf-8")
    os.environ["AIPOOL_ROUTES_FILE"] = str(routes)
    os.environ["AIPOOL_CACHE_SECRET"] = CACHE_SECRET
    os.environ["AIPOOL_TRACE_FILE"] = str(out / "trace-all.jsonl")
    os.environ["OTEL_BSP_SCHEDULE_DELAY"] = TRACE_BATCH_MS


def _worker(data_dir: Path) -> Child:
    from celeryconfig import QUEUES

    # The demo's one worker serves every queue: no sibling to gossip or mingle with, no monitor
    # to send heartbeats to.
    argv = worker_argv(
        f"demo-{os.getpid()}",
        QUEUES,
        2,
        "INFO",
        without=("gossip", "mingle", "heartbeat"),
    )
    return Child(
        "worker", argv, env=dict(os.environ), log_path=data_dir / "worker.log", cwd=data_dir
    )


def _wait_for(worker: Child) -> None:
    # deferred: loads celery, kombu, sqlalchemy (~1657 ms of start-up) only when this runs
    from workers.app import app

    deadline = time.monotonic() + WORKER_START_S
    while not app.control.ping(timeout=0.5):
        if not worker.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the demo's worker did not start: {worker.log_tail(800)}")


def _say_settings(console: Console) -> None:
    console.print("[bold]Shortened for the demo[/] (everything else is ADR-006's default):")
    for s in SHORTENED:
        if s.why:
            console.print(f"  • {s.why} (ADR: {s.adr}; {s.env}={s.value})", highlight=False)


def _tell(stage: Any, console: Console) -> None:
    # deferred: loads rich, httpx (~139 ms of start-up) only when this runs
    from aipool.demo.story import SCENES

    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} scenes"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("starting", total=len(SCENES))
        for title, scene in SCENES:
            progress.update(task, description=title)
            section(console, title)
            try:
                scene(stage)
            except Exception as exc:  # a step that broke is a step that misbehaved: say which
                stage.check(
                    title, "the scene ran to its end", False, f"{type(exc).__name__}: {exc}"
                )
                return
            progress.advance(task)


def _keep_failover_trace(stage: Any, out: Path, console: Console) -> None:
    """Write the spans of the first request that failed over to ``failover-trace.jsonl`` and
    print its timeline (a check of the story: the trace covers every hop)."""
    from aipool.demo.traces import failover_trace, timeline
    from aipool.tracing.setup import flush

    flush()
    spans = failover_trace(stage.failover_trace_id, out / "trace-all.jsonl", wait_s=10.0)
    path = out / "failover-trace.jsonl"
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in spans), "utf-8")
    section(console, "The trace of a request that failed over (Ollama down, Gemini answered)")
    for line in timeline(spans):
        console.print(f"  {line}", highlight=False)
    names = {s["name"] for s in spans}
    stage.check(
        "tracing",
        "one trace covers the send, the routing, both hops with their queue waits, and the result",
        {"aipool.submit", "aipool.route", "aipool.queue_wait", "aipool.call", "aipool.result"}
        <= names
        and sum(s["name"] == "run/ai.generate" for s in spans) == 2,
        f"{len(spans)} spans in {path.name}",
    )


def _findings(stage: Any, sink: Any, worker: Child, processes: dict[str, int]) -> Any:
    from datetime import UTC, datetime

    from sqlalchemy import func, select

    # deferred: loads sqlalchemy, alembic, pydantic-settings (~1510 ms of start-up) only when this runs
    from aipool.budget.checks import default_engine
    from aipool.demo.findings import Findings
    from aipool.demo.transitions import read_transitions
    from aipool.ledger.models import UsageLogRow
    from aipool.ledger.summary import summarize
    from aipool.ledger.usage_log import UsageLog, drain

    engine = default_engine()
    drain(stage.redis, engine)
    pending = UsageLog(stage.redis).pending()
    start = datetime.fromtimestamp(stage.started - 1, UTC)
    end = datetime.now(UTC)
    with engine.connect() as conn:
        rows = int(conn.execute(select(func.count()).select_from(UsageLogRow)).scalar_one())
    wait_until(lambda: sum(a.rule == "breaker_open" for a in sink.alerts) >= 2, ALERT_DELIVERY_S)
    assert worker.log_path is not None
    return Findings(
        started=stage.started,
        finished=time.time(),
        sent=list(stage.sent),
        summaries=summarize(engine, start, end),
        ledger_rows=rows,
        pending=pending,
        transitions=read_transitions(worker.log_path),
        alerts=list(sink.alerts),
        checks=stage.checks,
        marks=list(stage.marks),
        processes=processes,
        data_dir=str(worker.log_path.parent),
    )


def _show(findings: Any, console: Console) -> None:
    # deferred: loads sqlalchemy, alembic, pydantic-settings (~1244 ms of start-up) only when this runs
    from aipool.views.status_tables import summary_table

    section(console, "What the ledger says")
    console.print(summary_table(findings.summaries, lang="en", title="Per provider"))
    transitions = Table(title="Breaker transitions")
    for column in ("when", "provider", "from", "to", "why"):
        transitions.add_column(column)
    for t in findings.transitions:
        transitions.add_row(f"+{t.at - findings.started:.1f} s", t.provider, t.old, t.new, t.reason)
    console.print(transitions)
    alerts = Table(title="Alerts sent")
    for column in ("when", "rule", "provider", "status", "summary"):
        alerts.add_column(column)
    for a in findings.alerts:
        alerts.add_row(f"+{a.at - findings.started:.1f} s", a.rule, a.provider, a.status, a.summary)
    console.print(alerts)


def run_demo(
    out: Path = Path("aipool-demo"), keep: bool = False, console: Console | None = None
) -> int:
    """Tell the story; return 0 when every step behaved as it says, 1 otherwise."""
    console = console or Console()
    data_dir = Path(tempfile.mkdtemp(prefix="aipool-demo-")).resolve()
    out = out.resolve()
    started: dict[str, int] = {}
    with signals_end_the_command(), contextlib.ExitStack() as cleanup:
        if not keep:
            cleanup.callback(shutil.rmtree, data_dir, ignore_errors=True)
        out.mkdir(parents=True, exist_ok=True)
        (out / "trace-all.jsonl").unlink(missing_ok=True)
        _environment(data_dir, out)

        ledger = f"sqlite:///{data_dir / 'aipool.db'}"
        redis_server = EmbeddedRedis(data_dir, owner="aipool demo", database_url=ledger)
        cleanup.callback(redis_server.stop)
        running = redis_server.start()
        started["redis"] = running.redis_pid
        os.environ["REDIS_URL"] = running.redis_url
        os.environ["DATABASE_URL"] = ledger
        # deferred: loads rich, httpx (~135 ms of start-up) only when this runs
        from aipool.demo.alert_sink import AlertSink
        from aipool.simulator import Simulator

        sim = cleanup.enter_context(Simulator())
        for kind, env in BASE_URL_ENV.items():
            os.environ[env] = sim.base_urls[kind]
        sink = cleanup.enter_context(AlertSink())
        os.environ["AIPOOL_ALERT_WEBHOOK_URL"] = sink.url
        console.print(
            f"[bold]aipool demo[/]  data {data_dir}  redis {running.redis_url}  "
            f"simulators {sim.admin_url}",
            highlight=False,
        )
        _say_settings(console)
        # deferred: loads sqlalchemy, alembic, pydantic-settings (~1198 ms of start-up) only when this runs
        from aipool.ledger.db import migrate

        migrate(ledger)
        worker = _worker(data_dir)
        cleanup.callback(worker.stop)
        started["worker"] = worker.pid
        with console.status("starting a worker on every queue"):
            _wait_for(worker)
        # deferred: loads sqlalchemy, alembic, pydantic-settings (~1475 ms of start-up) only when this runs
        from aipool.demo.findings import closing_checks, write
        from aipool.demo.stage import Stage
        from aipool.redis.url import connect

        stage = Stage(console=console, sim=sim, redis=connect(running.redis_url))
        _tell(stage, console)
        _keep_failover_trace(stage, out, console)
        section(console, "The ledger, the breakers, the alerts")
        findings = _findings(stage, sink, worker, started)
        closing_checks(stage, findings)
        paths = write(findings, out)
        _show(findings, console)
        stage.redis.close()
    console.print(
        f"stopped every process the demo started ({', '.join(f'{k} {v}' for k, v in started.items())}); "
        + (f"data kept in {data_dir}" if keep else "its data directory is removed"),
        highlight=False,
    )
    console.print(f"report: {paths[0]}  chart: {paths[2]}  data: {paths[1]}", highlight=False)
    if stage.failed:
        console.print(
            f"[bold red]{len(stage.failed)} step(s) did not behave as the story says:[/] "
            + "; ".join(f"{c.scene}: {c.what}" for c in stage.failed),
            highlight=False,
        )
        return 1
    console.print("[bold green]every step behaved as ADR-006 says[/]")
    return 0
