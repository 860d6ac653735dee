"""The breaker's log, as an operator watching an outage sees it: the README's worker command runs
at Celery's default level (WARNING), and shows the breaker opening and closing again, and the
alert firing and resolving."""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery import Celery

from aipool.ledger.db import migrate
from aipool.simulator import Simulator
from tests.conftest import worker_env
from tests.support.pool import ROOT
from tests.support.services import RedisServer
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _readme_worker_command() -> list[str]:
    """The worker command of the README's "Try it by hand", as written there."""
    section = README.split("## Try it by hand", 1)[1].split("## Sending requests", 1)[0]
    (line,) = [x for x in section.splitlines() if x.startswith("aipool worker")]
    return shlex.split(line.split("#", 1)[0])


def test_given_the_readmes_worker_when_ollama_fails_and_recovers_then_its_log_shows_both(
    tmp_path: Path,
) -> None:
    command = _readme_worker_command()
    # the README's command sets no log level: aipool worker's default, INFO
    assert not [a for a in command if a.startswith(("-l", "--loglevel"))]
    redis_server = RedisServer().start()
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(ledger)
    log_path = tmp_path / "worker.log"
    logs = tmp_path / "logs"

    def worker_logs() -> str:
        # aipool worker writes one log per class of queue; the alert comes from the maintenance
        # queue's worker, the breaker's lines from the worker that called Ollama.
        return "".join(path.read_text() for path in sorted(logs.glob("*.log")))

    with Simulator() as sim, log_path.open("wb") as log:
        env = worker_env(
            REDIS_URL=redis_server.url,
            CELERY_BROKER_URL=redis_server.url,
            CELERY_RESULT_BACKEND=redis_server.url,
            DATABASE_URL=ledger,
            OLLAMA_BASE_URL=sim.base_urls["ollama"],
            GEMINI_BASE_URL=sim.base_urls["gemini"],
            ANTHROPIC_BASE_URL=sim.base_urls["anthropic"],
            NVIDIA_BASE_URL=sim.base_urls["openai"],
            AIPOOL_OLLAMA_RECOVERY_TIMEOUT="1",  # ADR-006's 30 s, shortened for the test
            AIPOOL_ALERTS="pool",
        )
        worker = subprocess.Popen(
            [str(Path(sys.executable).with_name("aipool")), *command[1:], "--log-dir", str(logs)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        producer = Celery("outage-watcher", broker=redis_server.url, backend=redis_server.url)
        try:
            eventually(lambda: bool(producer.control.ping(timeout=0.5)), 30, "the worker")

            def ask(n: int) -> dict[str, object]:
                request = {"prompt": f"What is a pod? ({n})"}
                sent = producer.send_task(
                    "ai.generate", kwargs={"request": request}, queue="router"
                )
                return dict(sent.get(timeout=30))

            # When Ollama goes down (`aipool simulate fault ollama down`) and requests keep coming
            sim.set_fault("ollama", "down")
            answered = [ask(n)["provider"] for n in range(4)]
            assert answered == ["gemini"] * 4
            eventually(lambda: "Ollama 服務可能已離線" in worker_logs(), 20, "the alert")
            # and it comes back (`aipool simulate heal ollama`), and a request makes the trial call
            sim.heal("ollama")
            time.sleep(1.2)
            assert ask(5)["provider"] == "ollama"
            eventually(lambda: "已恢復：" in worker_logs(), 20, "the recovery")
        finally:
            worker.terminate()
            worker.wait(timeout=30)
            producer.close()
            redis_server.stop()
    # Then the workers' logs show the breaker opening and closing, and the alert firing and
    # resolving, at the README's level
    text = worker_logs()
    assert "breaker ollama: closed -> open (3 consecutive failures)" in text
    assert "breaker ollama: half_open -> closed (trial call succeeded)" in text
    assert "[firing/critical] Ollama 服務可能已離線" in text
    assert "[resolved/critical] 已恢復：Ollama 服務可能已離線" in text
