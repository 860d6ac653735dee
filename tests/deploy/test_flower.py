"""Flower, run for real against the pool's workers, as an operator uses it.

``celery flower`` takes its login from ``FLOWER_BASIC_AUTH`` in the environment (never from its
arguments), refuses every page and API call without it, and shows each hop of a request, with its
queue, while the request moves along its chain: never the prompt, never a key, and not the answer.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from celery import Celery

from tests.conftest import worker_env
from tests.deploy.conftest import MonitoredPool
from tests.support.pool import ROOT
from tests.support.services import free_port
from tests.support.waiting import eventually
from workers.messages import ANSWER_WITHHELD

pytestmark = pytest.mark.integration

PROMPT = "Which of our invoices for ACME-7731 are overdue?"
#: The workers' metrics token (``AIPOOL_METRICS_TOKEN``), which Prometheus scrapes Flower with too.
TOKEN = secrets.token_hex(16)


@dataclass
class Flower:
    process: subprocess.Popen[bytes]
    url: str
    login: tuple[str, str]
    log_path: Path

    def get(
        self, path: str, *, auth: tuple[str, str] | None = None, bearer: str | None = None
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        return httpx.get(f"{self.url}{path}", auth=auth, headers=headers, timeout=10)

    def shown(self, path: str) -> Any:
        response = self.get(path, auth=self.login)
        response.raise_for_status()
        return response.json()


@pytest.fixture(scope="module")
def flower(monitored_pool: MonitoredPool) -> Iterator[Flower]:
    password = secrets.token_hex(12)
    login = ("ops", password)
    port = free_port()
    directory = Path(tempfile.mkdtemp(prefix="aipool-flower-"))
    env = worker_env(
        REDIS_URL=monitored_pool.redis.url,
        CELERY_BROKER_URL=monitored_pool.redis.url,
        CELERY_RESULT_BACKEND=monitored_pool.redis.url,
        FLOWER_BASIC_AUTH=f"{login[0]}:{login[1]}",
        AIPOOL_METRICS_TOKEN=TOKEN,
    )
    # As deployed (compose, k8s): Flower is one process and keeps its metrics in memory.
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log_path = directory / "flower.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers.app",
                "flower",
                "--address=127.0.0.1",
                f"--port={port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Flower(process, f"http://127.0.0.1:{port}", login, log_path)
    try:
        eventually(lambda: _healthy(running), 30, "flower answering /healthcheck", interval=0.1)
        # Flower listens to task events from now on: a ping it shows proves it
        eventually(lambda: _sees_a_ping(running, monitored_pool), 30, "flower seeing events")
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_path.unlink()
        directory.rmdir()


def _healthy(flower: Flower) -> bool:
    if flower.process.poll() is not None:
        raise RuntimeError(f"flower exited: {flower.log_path.read_text(errors='replace')}")
    try:
        return flower.get("/healthcheck").status_code == 200
    except httpx.HTTPError:
        return False


def _sees_a_ping(flower: Flower, pool: MonitoredPool) -> bool:
    sent = pool.producer.send_task("ai.ping", queue="router")
    sent.get(timeout=10)
    return str(sent.id) in flower.shown("/api/tasks")


def test_given_flower_when_asked_without_its_login_then_it_refuses_and_hides_the_password(
    flower: Flower,
) -> None:
    # Then: every page and API call needs the login
    for path in ("/", "/tasks", "/api/tasks", "/api/workers", "/broker"):
        assert flower.get(path).status_code == 401, path
        assert flower.get(path, auth=(flower.login[0], "wrong")).status_code == 401, path
    assert flower.get("/api/tasks", auth=flower.login).status_code == 200
    # only the probes' page is open
    assert flower.get("/healthcheck").status_code == 200
    # and the metrics are served to the login, or to Prometheus with the workers' metrics token
    assert flower.get("/metrics").status_code == 401
    assert flower.get("/metrics", auth=(flower.login[0], "wrong")).status_code == 401
    assert flower.get("/metrics", bearer="not-the-token").status_code == 401
    for metrics in (
        flower.get("/metrics", auth=flower.login),
        flower.get("/metrics", bearer=TOKEN),
    ):
        assert metrics.status_code == 200 and "flower_events_total" in metrics.text
    # and the password is nowhere in the process's arguments (`ps` shows those to every user)
    arguments = Path(f"/proc/{flower.process.pid}/cmdline").read_bytes().decode()
    assert flower.login[1] not in arguments
    assert "Error" not in flower.log_path.read_text(errors="replace")


def _hop(flower: Flower, task_id: str, queue: str) -> dict[str, Any] | None:
    task = flower.shown(f"/api/task/info/{task_id}")
    if task.get("routing_key") == queue and f"'provider': '{queue}'" in str(task.get("kwargs")):
        return dict(task)
    return None


def test_given_a_request_falling_back_when_watched_in_flower_then_each_hop_shows_with_its_queue(
    flower: Flower, monitored_pool: MonitoredPool
) -> None:
    pool, sim = monitored_pool, monitored_pool.simulator
    control = pool.producer.app.control
    worker = [pool.providers.name]
    seen: list[dict[str, Any]] = []
    plain = Celery(broker=pool.redis.url, backend=pool.redis.url, set_as_current=False)
    try:
        # Given: Ollama failing, and the provider worker holding back from the ollama and gemini
        # queues, so each hop waits in its queue until the test lets it run
        sim.set_fault("ollama", "error_500")
        for queue in ("ollama", "gemini"):
            control.cancel_consumer(queue, destination=worker, reply=True)
        # When: a producer without aipool sends a request, exactly as the README shows
        sent = plain.send_task(
            "ai.generate", kwargs={"request": {"prompt": PROMPT, "user_id": "u-f"}}, queue="router"
        )
        task_id = str(sent.id)
        # Then: Flower shows it waiting at its first hop, on the ollama queue
        seen.append(eventually(lambda: _hop(flower, task_id, "ollama"), 15, "hop 0 in Flower"))
        control.add_consumer("ollama", destination=worker, reply=True)
        # then, Ollama having failed, at its second hop, on the gemini queue
        seen.append(eventually(lambda: _hop(flower, task_id, "gemini"), 15, "hop 1 in Flower"))
        control.add_consumer("gemini", destination=worker, reply=True)
        answer = sent.get(timeout=30)
        done = eventually(
            lambda: (t := flower.shown(f"/api/task/info/{task_id}"))["state"] == "SUCCESS" and t,
            15,
            "the answer in Flower",
        )
    finally:
        for queue in ("ollama", "gemini"):
            control.add_consumer(queue, destination=worker, reply=True)
        sim.reset()
        plain.close()
    assert answer["provider"] == "gemini"
    assert "'hop': 0" in seen[0]["kwargs"] and "'hop': 1" in seen[1]["kwargs"]
    assert done["routing_key"] == "gemini"
    # Flower says the request succeeded, not what it answered (AIPOOL_FLOWER_SHOWS_ANSWERS off)
    assert done["result"] == ANSWER_WITHHELD
    assert flower.get(f"/api/task/result/{task_id}", auth=flower.login).status_code == 503
    # And: nothing Flower shows of it, on any page or API, holds the prompt or a key
    shown = [
        *(str(hop) for hop in seen),
        str(flower.shown("/api/tasks")),
        str(flower.shown(f"/api/task/info/{task_id}")),
        str(flower.shown("/api/workers")),
        flower.get(f"/task/{task_id}", auth=flower.login).text,
        flower.get("/tasks/datatable?draw=1&start=0&length=50", auth=flower.login).text,
    ]
    keys = [os.environ[name] for name in ("GEMINI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY")]
    for text in shown:
        for secret in (PROMPT, "ACME-7731", *keys):
            assert secret not in text
