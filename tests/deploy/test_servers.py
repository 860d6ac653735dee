"""Flower and the usage report as compose and Kubernetes run them: each listens on every interface
of its container only because the command says so (their default is loopback, which a Service or
a published port cannot reach), and each has its login from a secret, never anonymous."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy import test_k8s as k8s

ROOT = Path(__file__).resolve().parents[2]
#: role -> (the argument that names the address, the variable that carries the login)
SERVERS = {
    "flower": ("--address=0.0.0.0", "FLOWER_BASIC_AUTH"),
    "health": ("--host 0.0.0.0", "AIPOOL_HEALTH_TOKEN"),
}


def _compose(role: str) -> dict[str, Any]:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
    service: dict[str, Any] = services[role]
    return service


@pytest.mark.parametrize("role", sorted(SERVERS))
def test_given_compose_when_a_server_starts_then_it_names_its_address_and_has_a_login(
    role: str,
) -> None:
    address, login = SERVERS[role]
    service = _compose(role)
    assert address in " ".join(service["command"])
    env = service.get("environment") or {}
    # the login is a mounted secret file (the entrypoint exports it), never "allow anonymous"
    secrets = set(service.get("secrets", []))
    assert f"{login}_FILE" in env or "aipool_health_token" in secrets
    assert "AIPOOL_ALLOW_ANONYMOUS" not in env


@pytest.mark.parametrize("root", [k8s.K8S, k8s.OVERLAY], ids=["base", "production-overlay"])
@pytest.mark.parametrize("role", sorted(SERVERS))
def test_given_kubernetes_when_a_server_starts_then_it_names_its_address_and_has_a_login(
    role: str, root: Path
) -> None:
    address, login = SERVERS[role]
    (container,) = k8s._pod(k8s._named("Deployment", f"aipool-{role}", root))["containers"]
    assert address in " ".join(container.get("command", []) + container.get("args", []))
    env = k8s.effective_env(container, root)
    # the login is a mounted secret file: named by <login>_FILE (the entrypoint exports it), or in
    # the secrets directory, where the settings read the pool's own secrets
    files = k8s.secret_files(k8s._named("Deployment", f"aipool-{role}", root), container)
    path = env.get(f"{login}_FILE", f"{env['AIPOOL_SECRETS_DIR']}/{login.lower()}")
    assert files.get(path, "").startswith(f"aipool-{role}/"), (path, files)
    assert "AIPOOL_ALLOW_ANONYMOUS" not in env
