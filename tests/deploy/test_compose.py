"""docker-compose.yml, Dockerfile and .dockerignore: what an operator running the stack relies on.

The files are parsed, not run: one worker per queue, one beat, keys only where they are used, prefetch
1 everywhere, Flower behind a login, no baked-in secret or site address.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from celeryconfig import QUEUES

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"

#: The key file each cloud queue's worker needs (compose secret names = /run/secrets/<name>).
OWN_KEY = {"gemini": "gemini_api_key", "claude": "anthropic_api_key", "nemotron": "nvidia_api_key"}

#: Shapes of real provider keys (Google, Anthropic, OpenAI-style, NVIDIA) and the ADR site's LAN.
KEY_LOOKING = re.compile(
    r"AIza[0-9A-Za-z_\-]{20,}|sk-ant-[0-9A-Za-z_\-]{8,}|sk-[0-9A-Za-z]{20,}|nvapi-[0-9A-Za-z_\-]{8,}"
)
SITE_ADDRESS = "192.168."


def _compose() -> dict[str, Any]:
    docs = list(yaml.safe_load_all(COMPOSE.read_text(encoding="utf-8")))
    assert len(docs) == 1
    return docs[0]


def _argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def _worker_queues(service: dict[str, Any]) -> list[str]:
    """The queues a ``celery worker`` service consumes (``-Q a,b``), empty for other services."""
    argv = _argv(service)
    if "worker" not in argv:
        return []
    queues: list[str] = []
    for i, arg in enumerate(argv):
        if arg in ("-Q", "--queues"):
            queues += argv[i + 1].split(",")
        elif arg.startswith("--queues="):
            queues += arg.split("=", 1)[1].split(",")
    return queues


def _workers() -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in _compose()["services"].items() if _worker_queues(svc)}


def _worker_for(queue: str) -> dict[str, Any]:
    (service,) = [s for s in _workers().values() if queue in _worker_queues(s)]
    return service


def _secret_names(service: dict[str, Any]) -> set[str]:
    return {s if isinstance(s, str) else s["source"] for s in service.get("secrets", [])}


def test_given_compose_when_parsed_then_every_queue_has_exactly_one_worker_service() -> None:
    # Given / When
    consumers: dict[str, list[str]] = {}
    for name, service in _workers().items():
        for queue in _worker_queues(service):
            consumers.setdefault(queue, []).append(name)
    # Then: each Celery queue is consumed by one service, and no service consumes an unknown queue
    assert set(consumers) == set(QUEUES)
    assert all(len(names) == 1 for names in consumers.values()), consumers


def test_given_compose_when_parsed_then_there_is_exactly_one_beat() -> None:
    services = _compose()["services"]
    beats = [name for name, svc in services.items() if "beat" in _argv(svc)]
    assert len(beats) == 1
    beat = services[beats[0]]
    assert beat.get("deploy", {}).get("replicas", 1) == 1
    assert "profiles" not in beat


@pytest.mark.parametrize("queue", QUEUES)
def test_given_a_worker_when_started_then_it_prefetches_one_and_is_pinged_by_name(
    queue: str,
) -> None:
    # Given
    service = _worker_for(queue)
    argv = _argv(service)
    # Then: the worker holds only the message it is working on
    assert "--prefetch-multiplier=1" in argv or "--disable-prefetch" in argv
    # and the healthcheck pings this very worker under the node name it starts with
    assert argv[argv.index("-n") + 1] == f"{queue}@%h"
    check = " ".join(service["healthcheck"]["test"])
    assert "inspect ping" in check
    assert f"-d {queue}@$$HOSTNAME" in check


def test_given_the_ollama_worker_when_inspected_then_it_holds_no_cloud_key() -> None:
    # Given
    service = _worker_for("ollama")
    env = service.get("environment", {})
    # Then: no mounted secret, no key variable, no value pointing at a key file
    assert _secret_names(service) == set()
    assert not [k for k in env if "API_KEY" in k or "SECRET" in k or "TOKEN" in k]
    assert not [v for v in env.values() if "api_key" in str(v).lower()]
    # and its concurrency is what one Ollama server runs in parallel, not a CPU count
    assert "--concurrency=2" in _argv(service)


def test_given_compose_when_inspected_then_each_cloud_worker_gets_only_its_own_key() -> None:
    compose = _compose()
    declared = set(compose["secrets"])
    for name, service in compose["services"].items():
        queues = _worker_queues(service)
        expected = {OWN_KEY[q] for q in queues if q in OWN_KEY}
        assert _secret_names(service) == expected, name
        # keys arrive only as files: no service carries a key in its environment
        assert not [k for k in service.get("environment", {}) if k.endswith("API_KEY")], name
    # each key is read from a host file: ./secrets/<name> unless <NAME>_FILE names another
    assert declared == set(OWN_KEY.values())
    for name, secret in compose["secrets"].items():
        assert secret["file"] == f"${{{name.upper()}_FILE:-./secrets/{name}}}"


def test_given_compose_when_inspected_then_cloud_workers_run_more_slots_than_ollama() -> None:
    def concurrency(queue: str) -> int:
        (arg,) = [a for a in _argv(_worker_for(queue)) if a.startswith("--concurrency=")]
        return int(arg.split("=", 1)[1])

    assert all(concurrency(q) > concurrency("ollama") for q in OWN_KEY)


def test_given_compose_when_inspected_then_ollama_url_is_the_users_to_set() -> None:
    compose = _compose()
    for service in compose["services"].values():
        url = service.get("environment", {}).get("OLLAMA_BASE_URL")
        if url is not None:
            assert url.startswith("${OLLAMA_BASE_URL:-"), url


def test_given_flower_when_started_then_it_requires_basic_auth_from_the_environment() -> None:
    # Given
    flower = _compose()["services"]["flower"]
    argv = " ".join(_argv(flower))
    # Then: the login is passed and compose refuses to start Flower without one
    assert "flower" in argv
    assert '--basic_auth="$$FLOWER_BASIC_AUTH"' in argv
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    assert any(str(p).endswith(":5555") for p in flower["ports"])
    # its healthcheck uses the one page that needs no login
    assert "/healthcheck" in " ".join(flower["healthcheck"]["test"])


def test_given_the_health_service_when_started_then_it_serves_the_usage_endpoint() -> None:
    health = _compose()["services"]["health"]
    argv = _argv(health)
    assert argv[:3] == ["aipool", "status", "--serve"]
    assert argv[argv.index("--port") + 1] == "8088"
    assert "/api/v1/health/ai-usage" in " ".join(health["healthcheck"]["test"])


def test_given_the_simulator_when_inspected_then_it_runs_only_in_its_profile() -> None:
    simulator = _compose()["services"]["simulator"]
    assert simulator["profiles"] == ["simulator"]
    assert _argv(simulator) == ["aipool", "simulate", "--host", "0.0.0.0"]


def test_given_compose_when_inspected_then_aipool_services_wait_for_healthy_stores() -> None:
    for name, service in _compose()["services"].items():
        if _worker_queues(service) or name in ("beat", "flower", "health"):
            depends = service["depends_on"]
            assert depends["redis"]["condition"] == "service_healthy", name
            assert depends["postgres"]["condition"] == "service_healthy", name


@pytest.mark.parametrize("path", [COMPOSE, DOCKERFILE, DOCKERIGNORE], ids=lambda p: p.name)
def test_given_a_deploy_file_when_scanned_then_it_holds_no_key_or_site_address(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not KEY_LOOKING.findall(text)
    assert SITE_ADDRESS not in text


def test_given_the_dockerfile_when_read_then_it_runs_a_worker_as_non_root_without_secrets() -> None:
    # Given
    lines = [
        line.strip() for line in DOCKERFILE.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    instructions = [line for line in lines if not line.startswith("#")]
    # Then: the runtime stage is python:3.11-slim and installs the package
    froms = [line for line in instructions if line.upper().startswith("FROM ")]
    assert froms[-1] == "FROM python:3.11-slim"
    assert any("pip install" in line for line in instructions)
    # it switches to a non-root user
    users = [line.split()[1] for line in instructions if line.upper().startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    # no ENV or ARG carries a key
    declared = " ".join(line for line in instructions if line.upper().startswith(("ENV ", "ARG ")))
    assert not re.search(r"API_KEY|SECRET|TOKEN|PASSWORD", declared)
    # and the default command is a Celery worker with prefetch 1
    cmd = " ".join(
        instructions[instructions.index(next(i for i in instructions if i.startswith("CMD"))) :]
    )
    assert '"worker"' in cmd and '"--prefetch-multiplier=1"' in cmd


def test_given_the_dockerignore_when_read_then_keys_and_local_state_stay_out_of_the_build() -> None:
    ignored = {
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "secrets", "var"} <= ignored
