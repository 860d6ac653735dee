"""k8s/: the manifests an operator applies with ``kubectl apply -k k8s/``.

Parsed, not applied: one worker Deployment per Celery queue, one beat, keys only where used,
prefetch 1, shutdown grace above the task time limit, KEDA scaling on the right lists. The alert
rules and the dashboard of k8s/monitoring have their own tests (test_alert_rules, test_monitoring).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import celeryconfig
from aipool.chains import PROVIDERS
from celeryconfig import QUEUES

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
# Kubernetes objects are the *.yaml files; k8s/monitoring also holds Prometheus's own rule file and
# its promtool tests (*.yml) and the Grafana dashboard (*.json), which kubectl never reads.
MANIFESTS = sorted(p for p in K8S.rglob("*.yaml") if p.is_file())

#: The Secret (and key) holding each cloud queue's API key.
OWN_KEY = {
    "gemini": ("aipool-gemini", "gemini_api_key"),
    "claude": ("aipool-anthropic", "anthropic_api_key"),
    "nemotron": ("aipool-nvidia", "nvidia_api_key"),
}
#: Secrets every aipool process may read: connection URLs, not provider keys.
SHARED_SECRETS = {"aipool-redis", "aipool-database"}

KEY_LOOKING = re.compile(
    r"AIza[0-9A-Za-z_\-]{20,}|sk-ant-[0-9A-Za-z_\-]{8,}|sk-[0-9A-Za-z]{20,}|nvapi-[0-9A-Za-z_\-]{8,}"
)
SITE_ADDRESS = "192.168."
# Hard time limit of a hop (celeryconfig default 120 s); the pod must outlive a hop in hand.
HARD_LIMIT_S = 120


def _load(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


DOCS: dict[Path, list[dict[str, Any]]] = {p: _load(p) for p in MANIFESTS}
OBJECTS = [d for p, docs in DOCS.items() if p.name != "kustomization.yaml" for d in docs]


def _of_kind(kind: str) -> list[dict[str, Any]]:
    return [o for o in OBJECTS if o["kind"] == kind]


def _named(kind: str, name: str) -> dict[str, Any]:
    (obj,) = [o for o in _of_kind(kind) if o["metadata"]["name"] == name]
    return obj


def _containers(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    return deployment["spec"]["template"]["spec"]["containers"]


def _argv(container: dict[str, Any]) -> list[str]:
    return [str(a) for a in container.get("command", []) + container.get("args", [])]


def _queues(deployment: dict[str, Any]) -> list[str]:
    queues: list[str] = []
    for container in _containers(deployment):
        argv = _argv(container)
        if "worker" in argv:
            queues += argv[argv.index("-Q") + 1].split(",")
    return queues


def _workers() -> dict[str, dict[str, Any]]:
    """Queue -> the worker Deployment consuming it (asserted unique elsewhere)."""
    return {q: d for d in _of_kind("Deployment") for q in _queues(d)}


def _secret_refs(deployment: dict[str, Any]) -> set[str]:
    """Every Secret a Deployment's pods can read, through volumes, env or envFrom."""
    spec = deployment["spec"]["template"]["spec"]
    refs = {v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v}
    for container in spec["containers"]:
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                refs.add(ref["name"])
        for source in container.get("envFrom", []):
            if "secretRef" in source:
                refs.add(source["secretRef"]["name"])
    return refs


def test_given_every_manifest_when_parsed_then_each_object_is_well_formed() -> None:
    assert MANIFESTS
    for path, docs in DOCS.items():
        assert docs, path
        for doc in docs:
            assert {"apiVersion", "kind"} <= set(doc), path
            if doc["kind"] not in ("Kustomization",):
                assert doc["metadata"]["name"], path
                assert doc["kind"] == "Namespace" or doc["metadata"]["namespace"] == "aipool"


def test_given_the_kustomization_when_read_then_it_lists_every_file_and_only_existing_ones() -> (
    None
):
    # Given
    (kustomization,) = DOCS[K8S / "kustomization.yaml"]
    listed = kustomization["resources"]
    # Then
    on_disk = {p.relative_to(K8S).as_posix() for p in MANIFESTS} - {"kustomization.yaml"}
    assert len(listed) == len(set(listed))
    assert set(listed) == on_disk
    assert kustomization["namespace"] == "aipool"


def test_given_the_workers_when_read_then_every_queue_has_exactly_one_deployment() -> None:
    consumers: dict[str, list[str]] = {}
    for deployment in _of_kind("Deployment"):
        for queue in _queues(deployment):
            consumers.setdefault(queue, []).append(deployment["metadata"]["name"])
    assert set(consumers) == set(QUEUES)
    assert all(len(names) == 1 for names in consumers.values()), consumers


@pytest.mark.parametrize("queue", QUEUES)
def test_given_a_worker_deployment_when_read_then_it_is_safe_to_scale_and_stop(queue: str) -> None:
    # Given
    deployment = _workers()[queue]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    argv = _argv(container)
    # Then: prefetch 1, so the Redis list is the real backlog
    assert "--prefetch-multiplier=1" in argv or "--disable-prefetch" in argv
    # a stop lets the hop in hand finish before SIGKILL
    assert pod["terminationGracePeriodSeconds"] > HARD_LIMIT_S
    assert pod["terminationGracePeriodSeconds"] > celeryconfig.task_time_limit
    # both probes ping this worker by the node name it starts with
    assert argv[argv.index("-n") + 1] == f"{queue}@%h"
    for probe in ("livenessProbe", "readinessProbe"):
        command = " ".join(container[probe]["exec"]["command"])
        assert "inspect ping" in command and f'-d "{queue}@$HOSTNAME"' in command, probe
    # it exposes its metrics port and runs as non-root
    assert {"name": "metrics", "containerPort": 9808} in container["ports"]
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_given_every_deployment_when_read_then_each_container_has_requests_and_limits() -> None:
    for deployment in _of_kind("Deployment"):
        for container in _containers(deployment):
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), deployment["metadata"]["name"]
            assert {"cpu", "memory"} <= set(resources["limits"]), deployment["metadata"]["name"]


def test_given_beat_when_read_then_exactly_one_runs_and_rollouts_never_overlap() -> None:
    beats = [d for d in _of_kind("Deployment") if any("beat" in _argv(c) for c in _containers(d))]
    assert len(beats) == 1
    (beat,) = beats
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    targets = {s["spec"]["scaleTargetRef"]["name"] for s in _of_kind("ScaledObject")}
    assert beat["metadata"]["name"] not in targets


def test_given_the_ollama_worker_when_read_then_no_cloud_key_reaches_it() -> None:
    # Given
    deployment = _workers()["ollama"]
    (container,) = _containers(deployment)
    # Then: only the connection-URL secrets, and no key-named variable
    assert _secret_refs(deployment) <= SHARED_SECRETS
    names = [e["name"] for e in container.get("env", [])]
    assert not [n for n in names if "API_KEY" in n or "TOKEN" in n]
    assert "--concurrency=2" in _argv(container)


def test_given_the_deployments_when_read_then_each_key_reaches_only_its_own_worker() -> None:
    key_secrets = {secret for secret, _ in OWN_KEY.values()}
    for deployment in _of_kind("Deployment"):
        queues = set(_queues(deployment))
        expected = {OWN_KEY[q][0] for q in queues if q in OWN_KEY}
        assert _secret_refs(deployment) & key_secrets == expected, deployment["metadata"]["name"]
    # and a cloud worker mounts just its key file, read-only, where aipool.secrets looks
    (config,) = _of_kind("ConfigMap")
    for queue, (secret, key) in OWN_KEY.items():
        pod = _workers()[queue]["spec"]["template"]["spec"]
        (volume,) = [v for v in pod["volumes"] if "secret" in v]
        assert volume["secret"]["secretName"] == secret
        assert volume["secret"]["items"] == [{"key": key, "path": key}]
        (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"]]
        assert mount["readOnly"] is True
        assert mount["mountPath"] == config["data"]["AIPOOL_SECRETS_DIR"]
        assert mount["mountPath"].startswith("/run/secrets")


def test_given_the_secret_templates_when_read_then_they_hold_no_value_and_are_never_applied() -> (
    None
):
    secrets = _of_kind("Secret")
    assert {s["metadata"]["name"] for s in secrets} >= {s for s, _ in OWN_KEY.values()}
    for secret in secrets:
        assert not secret.get("data"), secret["metadata"]["name"]
        assert all(v == "" for v in secret.get("stringData", {}).values())
        # kustomize drops local-config objects, so an apply never blanks a real Secret
        annotations = secret["metadata"]["annotations"]
        assert annotations["config.kubernetes.io/local-config"] == "true"
    # every Secret a Deployment reads has a template documenting it
    referenced = {r for d in _of_kind("Deployment") for r in _secret_refs(d)}
    assert referenced <= {s["metadata"]["name"] for s in secrets}


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.relative_to(K8S).as_posix())
def test_given_a_manifest_when_scanned_then_it_holds_no_key_or_site_address(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not KEY_LOOKING.findall(text)
    assert SITE_ADDRESS not in text


def test_given_the_scaled_objects_when_read_then_each_scales_a_provider_worker_on_its_list() -> (
    None
):
    # Given
    scaled = _of_kind("ScaledObject")
    deployments = {d["metadata"]["name"]: d for d in _of_kind("Deployment")}
    auths = {a["metadata"]["name"] for a in _of_kind("TriggerAuthentication")}
    (config,) = _of_kind("ConfigMap")
    # Then: every provider queue is scaled, once
    targets = [s["spec"]["scaleTargetRef"]["name"] for s in scaled]
    assert len(targets) == len(set(targets))
    listed = set()
    for obj in scaled:
        spec = obj["spec"]
        deployment = deployments[spec["scaleTargetRef"]["name"]]
        (trigger,) = spec["triggers"]
        meta = trigger["metadata"]
        assert trigger["type"] == "redis"
        # the list is the Celery queue that very Deployment consumes
        assert meta["listName"] in QUEUES
        assert _queues(deployment) == [meta["listName"]]
        listed.add(meta["listName"])
        # KEDA metadata values are strings of positive integers
        assert int(meta["listLength"]) >= 1 and int(meta["activationListLength"]) >= 0
        assert isinstance(meta["listLength"], str) and isinstance(meta["activationListLength"], str)
        assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
        # the Redis address is resolved from the target's environment (the ConfigMap)
        assert meta["addressFromEnv"] in config["data"]
        assert trigger["authenticationRef"]["name"] in auths
        # KEDA owns the replica count: a fixed one would fight it on every apply
        assert "replicas" not in deployment["spec"]
    assert listed == set(PROVIDERS)


def test_given_the_scaled_objects_when_read_then_ollama_stays_small_and_cloud_scales_more() -> None:
    maxima = {
        s["spec"]["triggers"][0]["metadata"]["listName"]: s["spec"]["maxReplicaCount"]
        for s in _of_kind("ScaledObject")
    }
    assert maxima["ollama"] <= 2
    assert all(maxima[q] > maxima["ollama"] for q in OWN_KEY)


def test_given_the_trigger_authentication_when_read_then_the_password_comes_from_a_secret() -> None:
    (auth,) = _of_kind("TriggerAuthentication")
    (ref,) = auth["spec"]["secretTargetRef"]
    assert ref["parameter"] == "password"
    assert ref["name"] == "aipool-redis"


def test_given_flower_when_read_then_it_requires_basic_auth_from_a_secret() -> None:
    # Given
    flower = _named("Deployment", "aipool-flower")
    (container,) = _containers(flower)
    # Then: the login comes from the aipool-flower Secret, through an env var
    assert "--basic_auth=$(FLOWER_BASIC_AUTH)" in _argv(container)
    (env,) = [e for e in container["env"] if e["name"] == "FLOWER_BASIC_AUTH"]
    assert env["valueFrom"]["secretKeyRef"] == {"name": "aipool-flower", "key": "basic-auth"}
    # probes use the one page that needs no login
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthcheck"
    service = _named("Service", "aipool-flower")
    assert [p["port"] for p in service["spec"]["ports"]] == [5555]


def test_given_the_health_endpoint_when_read_then_its_service_reaches_the_usage_report() -> None:
    health = _named("Deployment", "aipool-health")
    (container,) = _containers(health)
    argv = _argv(container)
    assert argv[:3] == ["aipool", "status", "--serve"]
    assert argv[argv.index("--port") + 1] == "8088"
    assert container["readinessProbe"]["httpGet"]["path"] == "/api/v1/health/ai-usage"
    service = _named("Service", "aipool-health")
    assert [p["port"] for p in service["spec"]["ports"]] == [8088]


def test_given_the_services_when_read_then_each_selects_pods_of_a_deployment() -> None:
    pod_labels = [d["spec"]["template"]["metadata"]["labels"] for d in _of_kind("Deployment")]
    for service in _of_kind("Service"):
        selector = service["spec"]["selector"].items()
        assert any(selector <= labels.items() for labels in pod_labels), service["metadata"]


def test_given_the_pod_monitor_when_read_then_it_scrapes_every_worker_on_9808() -> None:
    (monitor,) = _of_kind("PodMonitor")
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] == "metrics"
    selector = monitor["spec"]["selector"]["matchLabels"].items()
    for queue, deployment in _workers().items():
        assert selector <= deployment["spec"]["template"]["metadata"]["labels"].items(), queue


def test_given_the_config_map_when_read_then_it_holds_no_secret_and_a_user_set_ollama_url() -> None:
    (config,) = _of_kind("ConfigMap")
    data = config["data"]
    assert not [k for k in data if re.search(r"API_KEY|PASSWORD|TOKEN|SECRET$", k)]
    assert "REDIS_URL" not in data and "DATABASE_URL" not in data
    assert data["AIPOOL_TIMEZONE"] == "Asia/Taipei"
    assert data["OLLAMA_BASE_URL"].startswith("http://")
    # every Deployment reads it
    for deployment in _of_kind("Deployment"):
        for container in _containers(deployment):
            assert {"configMapRef": {"name": "aipool-config"}} in container["envFrom"]
