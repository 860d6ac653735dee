"""k8s/: the manifests an operator applies with ``kubectl apply -k k8s/`` (or an overlay of it).

No cluster runs here, so the manifests are validated, not applied: ``kubectl kustomize`` renders
the base and the example production overlay, ``kubernetes-validate --strict`` checks every core
object against the Kubernetes schema and the CRDs against their published schemas
(tests/deploy/schemas), and the rendered objects are read as an SRE would: one worker per queue,
probes that survive a broker outage, one beat with a kept schedule, keys only where used,
disruption budgets, a network policy per role whose egress names its destinations, Pod Security
``restricted``, topology spread, a migration Job, KEDA with a fallback, the Redis named in one
place, secrets only as mounted files, and every overlay's image by digest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import celeryconfig
from aipool.lanes import is_urgent_lane, queue_of, urgent_lane
from aipool.providers.catalog import PROVIDERS
from celeryconfig import QUEUES

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAY = ROOT / "deploy/overlays/production"
#: Every environment's overlay (deploy/overlays/production is the example).
OVERLAYS = sorted(p.parent for p in (ROOT / "deploy/overlays").glob("*/kustomization.yaml"))
#: The example overlay of a Redis behind Sentinel (k8s/components/redis-sentinel).
SENTINEL = ROOT / "deploy/overlays/sentinel"
SCHEMAS = Path(__file__).with_name("schemas")
#: API groups of the custom resources the manifests use (KEDA, Prometheus Operator).
CRD_GROUPS = {"keda.sh", "monitoring.coreos.com"}
MANIFESTS = sorted(p for p in K8S.rglob("*.yaml") if p.is_file())

#: The Secret (and key) holding each cloud queue's API key.
OWN_KEY = {
    "gemini": ("aipool-gemini", "gemini_api_key"),
    "claude": ("aipool-anthropic", "anthropic_api_key"),
    "nemotron": ("aipool-nvidia", "nvidia_api_key"),
}
#: Secrets every aipool process may read: connection settings, not provider keys.
SHARED_SECRETS = {"aipool-redis", "aipool-database"}
#: What every worker reads besides: the token its metrics ask for.
WORKER_SECRETS = {*SHARED_SECRETS, "aipool-metrics"}
#: Where each pod's secret files are mounted (the ConfigMap's AIPOOL_SECRETS_DIR).
SECRETS_DIR = "/run/secrets/aipool"
#: The one policy whose egress reaches public addresses: cloud workers to their providers' HTTPS.
PROVIDER_HTTPS_POLICY = "aipool-worker-cloud"
KEY_LOOKING = re.compile(
    r"AIza[0-9A-Za-z_\-]{20,}|sk-ant-[0-9A-Za-z_\-]{8,}|sk-[0-9A-Za-z]{20,}|nvapi-[0-9A-Za-z_\-]{8,}"
)
#: The ADR's site address, which must never be a default anywhere.
SITE_ADDRESS = "192.168.0.188"


@cache
def _render(root: Path) -> tuple[dict[str, Any], ...]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is not installed"
    out = subprocess.run(
        [kubectl, "kustomize", str(root)], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    return tuple(d for d in yaml.safe_load_all(out.stdout) if d)


def _objects(root: Path = K8S) -> tuple[dict[str, Any], ...]:
    return _render(root)


def _of_kind(kind: str, root: Path = K8S) -> list[dict[str, Any]]:
    return [o for o in _objects(root) if o["kind"] == kind]


def _named(kind: str, name: str, root: Path = K8S) -> dict[str, Any]:
    (obj,) = [o for o in _of_kind(kind, root) if o["metadata"]["name"] == name]
    return obj


def _pod(workload: dict[str, Any]) -> dict[str, Any]:
    return workload["spec"]["template"]["spec"]


def _workloads(root: Path = K8S) -> list[dict[str, Any]]:
    return _of_kind("Deployment", root) + _of_kind("Job", root)


def _argv(container: dict[str, Any]) -> list[str]:
    return [str(a) for a in container.get("command", []) + container.get("args", [])]


def _queues(deployment: dict[str, Any]) -> list[str]:
    queues: list[str] = []
    for container in _pod(deployment)["containers"]:
        argv = _argv(container)
        if "worker" in argv:
            queues += argv[argv.index("-Q") + 1].split(",")
    return queues


def _workers(root: Path = K8S) -> dict[str, dict[str, Any]]:
    """Queue -> the worker Deployment consuming it (asserted unique elsewhere)."""
    return {q: d for d in _of_kind("Deployment", root) for q in _queues(d)}


def _secret_sources(volume: dict[str, Any]) -> list[dict[str, Any]]:
    """The secrets a volume projects, each as ``{"name": ..., "items": [...]}``."""
    if "secret" in volume:
        return [{"name": volume["secret"]["secretName"], **volume["secret"]}]
    projected = volume.get("projected", {}).get("sources", [])
    return [source["secret"] for source in projected if "secret" in source]


def secret_files(workload: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    """Path in the container -> ``secret/key`` of every secret file mounted into it."""
    volumes = {v["name"]: v for v in _pod(workload).get("volumes", [])}
    files = {}
    for mount in container.get("volumeMounts", []):
        for source in _secret_sources(volumes[mount["name"]]):
            for item in source.get("items", []):
                path = f"{mount['mountPath']}/{item['path']}"
                files[path] = f"{source['name']}/{item['key']}"
    return files


def _secret_refs(workload: dict[str, Any]) -> set[str]:
    """Every Secret a workload's pods can read, through volumes, env or envFrom."""
    spec = _pod(workload)
    refs = {s["name"] for v in spec.get("volumes", []) for s in _secret_sources(v)}
    for container in spec["containers"]:
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                refs.add(ref["name"])
        refs |= {s["secretRef"]["name"] for s in container.get("envFrom", []) if "secretRef" in s}
    return refs


def effective_env(container: dict[str, Any], root: Path = K8S) -> dict[str, str]:
    """Name -> value (or ``<secret:name/key>``) of every variable the container's command sees:
    the pod spec's, and what the image's entrypoint (deploy/entrypoint.sh) exports from them,
    ``NAME`` for each ``NAME_FILE`` (``<file:path>``) and ``REDIS_URL`` from the ConfigMap's
    parts and the password file."""
    maps = {c["metadata"]["name"]: c.get("data", {}) for c in _of_kind("ConfigMap", root)}
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(maps[source["configMapRef"]["name"]])
    for entry in container.get("env", []):
        ref = entry.get("valueFrom", {}).get("secretKeyRef")
        env[entry["name"]] = f"<secret:{ref['name']}/{ref['key']}>" if ref else entry["value"]
    for name, value in list(env.items()):
        if name.endswith("_FILE") and name != "REDIS_PASSWORD_FILE":
            env.setdefault(name.removesuffix("_FILE"), f"<file:{value}>")
    if "REDIS_PASSWORD_FILE" in env and "REDIS_URL" not in env:
        env["REDIS_URL"] = (
            f"<entrypoint:{env.get('REDIS_SCHEME', 'redis')}://"
            f":<file:{env['REDIS_PASSWORD_FILE']}>@$(REDIS_HOST):$(REDIS_PORT)/$(REDIS_DB)>"
        )
    return env


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).with_name("kubernetes-validate")
    assert program.exists(), (
        "kubernetes-validate is not installed (pip install kubernetes-validate)"
    )
    return subprocess.run(
        [str(program), "--strict", "--quiet", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    "root", [K8S, OVERLAY, SENTINEL], ids=["base", "production-overlay", "sentinel-overlay"]
)
def test_given_the_kustomization_when_rendered_then_every_object_is_valid(
    root: Path, tmp_path: Path
) -> None:
    # Given the rendered kustomization
    objects = _objects(root)
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    # When kubernetes-validate checks it strictly
    result = _validate(rendered)
    # Then every core object passes, and the only kinds it has no schema for are custom ones
    assert result.returncode == 0, result.stdout + result.stderr
    unknown = set(re.findall(r"Couldn't find schema for kind (\w+)", result.stdout + result.stderr))
    assert unknown <= {o["kind"] for o in objects if _group(o) in CRD_GROUPS}
    # and every custom resource passes its CRD's published schema
    for obj in objects:
        if _group(obj) in CRD_GROUPS:
            version = obj["apiVersion"].split("/")[1]
            path = SCHEMAS / _group(obj) / f"{obj['kind'].lower()}_{version}.json"
            assert path.exists(), f"no published schema kept for {obj['kind']}"
            schema = json.loads(path.read_text(encoding="utf-8"))
            # Not checked against the metaschema: a published pattern uses Go's regex syntax
            # (PrometheusRule's "^(?i)(abort|warn)?$"), which Python compiles only when needed.
            jsonschema.validators.validator_for(schema)(schema).validate(obj)


def _group(obj: dict[str, Any]) -> str:
    api_version = obj["apiVersion"]
    return api_version.split("/")[0] if "/" in api_version else ""


def test_given_the_kustomization_when_read_then_it_lists_every_manifest_of_the_base() -> None:
    (kustomization,) = [
        d for d in yaml.safe_load_all((K8S / "kustomization.yaml").read_text()) if d
    ]
    listed = kustomization["resources"]
    # every file of Kubernetes objects under k8s/ (not kustomizations, components or other data)
    on_disk = {
        p.relative_to(K8S).as_posix()
        for p in MANIFESTS
        if p.name != "kustomization.yaml"
        and "components" not in p.parts
        and all({"apiVersion", "kind"} <= set(d) for d in yaml.safe_load_all(p.read_text()) if d)
    }
    assert len(listed) == len(set(listed))
    assert set(listed) == on_disk
    assert kustomization["namespace"] == "aipool"


def test_given_the_workers_when_rendered_then_every_queue_has_exactly_one_deployment() -> None:
    consumers: dict[str, list[str]] = {}
    for deployment in _of_kind("Deployment"):
        for queue in _queues(deployment):
            consumers.setdefault(queue, []).append(deployment["metadata"]["name"])
    assert set(consumers) == set(QUEUES)
    assert all(len(names) == 1 for names in consumers.values()), consumers


@pytest.mark.parametrize("queue", QUEUES)
def test_given_a_worker_when_its_broker_is_down_then_no_probe_restarts_it(queue: str) -> None:
    # Given the worker's pod
    pod = _pod(_workers()[queue])
    (container,) = pod["containers"]
    argv = _argv(container)
    # Then liveness (and start-up) ask the worker's own metrics server, which answers whatever
    # the broker does, on its probe path (/metrics asks for the token, which a kubelet has not);
    # only readiness goes through the broker, by the worker's node name
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["metrics"]
    for probe in ("startupProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "metrics"}, probe
        assert "exec" not in container[probe]
    assert port == 9808 and effective_env(container)["AIPOOL_METRICS_PORT"] == "9808"
    ready = " ".join(container["readinessProbe"]["exec"]["command"])
    assert "inspect ping" in ready and f'-d "{queue}@$HOSTNAME"' in ready
    # through the image's entrypoint, so the probe reads the same secret files as the worker
    assert "aipool-entrypoint celery" in ready
    assert argv[argv.index("-n") + 1] == f"{queue}@%h"
    # and it holds one message at a time, and a stop lets the hop in hand finish
    assert "--prefetch-multiplier=1" in argv
    assert pod["terminationGracePeriodSeconds"] > celeryconfig.task_time_limit


def test_given_every_workload_when_rendered_then_it_meets_pod_security_restricted() -> None:
    # Given the namespace, which enforces the restricted profile
    (namespace,) = _of_kind("Namespace")
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    # Then every pod of the pool passes it, and sees no Service link variables
    for workload in _workloads():
        name = workload["metadata"]["name"]
        pod = _pod(workload)
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["enableServiceLinks"] is False, name
        assert not [v for v in pod.get("volumes", []) if "hostPath" in v], name
        for container in pod["containers"] + pod.get("initContainers", []):
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["capabilities"]["drop"] == ["ALL"], name
            assert "add" not in security["capabilities"], name
            assert security["readOnlyRootFilesystem"] is True, name
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), name
            assert {"cpu", "memory"} <= set(resources["limits"]), name


def test_given_the_image_when_rendered_then_one_pinned_image_runs_everywhere() -> None:
    for root in (K8S, OVERLAY):
        images = {c["image"] for w in _workloads(root) for c in _pod(w)["containers"]}
        (image,) = images
        assert re.search(r"(:\d+\.\d+\.\d+|@sha256:[0-9a-f]{64})$", image), image
        assert not image.endswith(":latest")
    (overlay_image,) = {c["image"] for w in _workloads(OVERLAY) for c in _pod(w)["containers"]}
    assert overlay_image.startswith("registry.example.com/")


def test_given_the_deployments_when_rendered_then_each_can_be_disrupted_one_pod_at_a_time() -> None:
    budgets = _of_kind("PodDisruptionBudget")
    for deployment in _of_kind("Deployment"):
        if deployment["spec"].get("replicas") == 1 and not _queues(deployment):
            continue  # beat and Flower: one replica by design, Recreate or history in memory
        labels = _pod_labels(deployment)
        covering = [b for b in budgets if b["spec"]["selector"]["matchLabels"].items() <= labels]
        assert len(covering) == 1, deployment["metadata"]["name"]
        assert covering[0]["spec"]["maxUnavailable"] == 1


def _pod_labels(workload: dict[str, Any]) -> Any:
    return workload["spec"]["template"]["metadata"]["labels"].items()


def test_given_the_scaled_deployments_when_rendered_then_they_spread_over_nodes() -> None:
    for deployment in _of_kind("Deployment"):
        if deployment["spec"].get("replicas") == 1:
            continue
        constraints = _pod(deployment)["topologySpreadConstraints"]
        keys = {c["topologyKey"] for c in constraints}
        assert "kubernetes.io/hostname" in keys, deployment["metadata"]["name"]
        for constraint in constraints:
            assert constraint["whenUnsatisfiable"] == "ScheduleAnyway"
            assert constraint["labelSelector"]["matchLabels"].items() <= _pod_labels(deployment)


def _policies_for(workload: dict[str, Any], kind: str, root: Path = K8S) -> list[dict[str, Any]]:
    """The NetworkPolicies of type ``kind`` (Ingress/Egress) selecting the workload's pods."""
    labels = dict(_pod_labels(workload))
    found = []
    for policy in _of_kind("NetworkPolicy", root):
        spec = policy["spec"]
        if kind not in spec["policyTypes"]:
            continue
        selector = spec["podSelector"]
        if not selector.get("matchLabels", {}).items() <= labels.items():
            continue
        if not all(
            labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", [])
        ):
            continue
        found.append(policy)
    return found


def _allowed_ports(workload: dict[str, Any], kind: str, root: Path = K8S) -> set[int]:
    rules = "ingress" if kind == "Ingress" else "egress"
    return {
        port["port"]
        for policy in _policies_for(workload, kind, root)
        for rule in policy["spec"].get(rules, [])
        for port in rule.get("ports", [])
    }


def test_given_the_network_policies_when_rendered_then_each_role_gets_only_what_it_needs() -> None:
    # Given a default deny of everything in the namespace
    deny = _named("NetworkPolicy", "aipool-default-deny")
    assert deny["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    workers = _workers()
    # Then every pod resolves names and reaches Redis, RabbitMQ and PostgreSQL
    for workload in _workloads():
        assert {53, 6379, 5672, 5432} <= _allowed_ports(workload, "Egress")
    # workers are scraped on their metrics port and nothing else reaches them
    for queue, deployment in workers.items():
        assert _allowed_ports(deployment, "Ingress") == {9808}, queue
    # only cloud workers reach HTTPS, only the Ollama worker reaches Ollama
    for queue, deployment in workers.items():
        egress = _allowed_ports(deployment, "Egress")
        assert (443 in egress) == (queue_of(queue) in (*OWN_KEY, "maintenance")), queue
        assert (11434 in egress) == (queue_of(queue) == "ollama"), queue
    # and Flower and the health endpoint are reached on their one port
    assert _allowed_ports(_named("Deployment", "aipool-flower"), "Ingress") == {5555}
    assert _allowed_ports(_named("Deployment", "aipool-health"), "Ingress") == {8088}
    assert _allowed_ports(_named("Deployment", "aipool-beat"), "Ingress") == set()


def test_given_beat_when_rendered_then_one_runs_with_a_probe_and_a_kept_schedule() -> None:
    beats = [
        d for d in _of_kind("Deployment") if any("beat" in _argv(c) for c in _pod(d)["containers"])
    ]
    (beat,) = beats
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    targets = {s["spec"]["scaleTargetRef"]["name"] for s in _of_kind("ScaledObject")}
    assert beat["metadata"]["name"] not in targets
    (container,) = _pod(beat)["containers"]
    # its schedule file is on a persistent volume, and its liveness watches that file
    (schedule,) = [a.split("=", 1)[1] for a in _argv(container) if a.startswith("--schedule=")]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volume_name = mounts[str(Path(schedule).parent)]
    (volume,) = [v for v in _pod(beat)["volumes"] if v["name"] == volume_name]
    claim = _named("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"])
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    probe = " ".join(container["livenessProbe"]["exec"]["command"])
    assert str(Path(schedule).parent) in probe and "-mmin" in probe


def test_given_the_migration_job_when_rendered_then_it_upgrades_the_ledger_only() -> None:
    job = _named("Job", "aipool-migrate")
    (container,) = _pod(job)["containers"]
    assert _argv(container) == ["aipool", "migrate"]
    assert _pod(job)["restartPolicy"] == "OnFailure"
    assert _secret_refs(job) == {"aipool-database"}


@pytest.mark.parametrize("queue", ["ollama", urgent_lane("ollama")])
def test_given_the_ollama_worker_when_rendered_then_no_cloud_key_reaches_it(queue: str) -> None:
    deployment = _workers()[queue]
    (container,) = _pod(deployment)["containers"]
    assert _secret_refs(deployment) <= WORKER_SECRETS
    assert not [n for n in effective_env(container) if "API_KEY" in n or "TOKEN" in n]
    assert "--concurrency=2" in _argv(container)


def test_given_the_deployments_when_rendered_then_each_key_reaches_only_its_own_worker() -> None:
    key_secrets = {secret for secret, _ in OWN_KEY.values()}
    for workload in _workloads():
        expected = {OWN_KEY[queue_of(q)][0] for q in _queues(workload) if queue_of(q) in OWN_KEY}
        assert _secret_refs(workload) & key_secrets == expected, workload["metadata"]["name"]
    config = _named("ConfigMap", "aipool-config")
    for queue, (secret, key) in [(q, k) for p, k in OWN_KEY.items() for q in (p, urgent_lane(p))]:
        workload = _workers()[queue]
        files = secret_files(workload, _pod(workload)["containers"][0])
        # the key is the file $AIPOOL_SECRETS_DIR/<key>, where the settings read it
        assert files[f"{config['data']['AIPOOL_SECRETS_DIR']}/{key}"] == f"{secret}/{key}"


def test_given_the_secret_templates_when_read_then_they_hold_no_value_and_are_never_applied() -> (
    None
):
    templates = [d for d in yaml.safe_load_all((K8S / "secrets.yaml").read_text()) if d]
    for secret in templates:
        assert not secret.get("data"), secret["metadata"]["name"]
        assert all(v == "" for v in secret.get("stringData", {}).values())
        assert secret["metadata"]["annotations"]["config.kubernetes.io/local-config"] == "true"
    # kustomize drops them, so an apply never blanks a real Secret
    assert not _of_kind("Secret")
    # and the keys workloads mount (and KEDA reads) are exactly the documented ones: none is
    # read without a template, and no template keeps a key nothing reads
    documented = {
        f"{s['metadata']['name']}/{k}" for s in templates for k in s.get("stringData", {})
    }
    used = {
        ref
        for workload in _workloads()
        for container in _pod(workload)["containers"]
        for ref in secret_files(workload, container).values()
    }
    used |= {
        f"{t['name']}/{t['key']}"
        for auth in _of_kind("TriggerAuthentication")
        for t in auth["spec"]["secretTargetRef"]
    }
    assert used == documented


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.relative_to(K8S).as_posix())
def test_given_a_manifest_when_scanned_then_it_holds_no_key_or_site_address(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert not KEY_LOOKING.findall(text)
    assert SITE_ADDRESS not in text


@pytest.mark.parametrize(
    ("root", "scheme"),
    [(K8S, "redis"), (OVERLAY, "redis"), (SENTINEL, "sentinel")],
    ids=["base", "production-overlay", "sentinel-overlay"],
)
def test_given_the_redis_when_configured_then_it_is_named_in_one_place(
    root: Path, scheme: str
) -> None:
    # Given the one ConfigMap naming the Redis (or, with Sentinel, its sentinels)
    config = _named("ConfigMap", "aipool-config", root)
    data = config["data"]
    # Then no pod spec names a Redis URL: the entrypoint builds every pod's from it and the
    # Secret's password, mounted as a file
    for workload in _workloads(root):
        for container in _pod(workload)["containers"]:
            env = {e["name"]: e for e in container.get("env", [])}
            assert "REDIS_URL" not in env and "REDIS_PASSWORD" not in env
            if "REDIS_PASSWORD_FILE" not in env:
                continue
            password = env["REDIS_PASSWORD_FILE"]["value"]
            assert secret_files(workload, container)[password] == "aipool-redis/password"
            assert {"REDIS_HOST", "REDIS_PORT", "REDIS_DB"} <= set(data)
    # with the scheme the entrypoint puts REDIS_URL together with
    assert data.get("REDIS_SCHEME", "redis") == scheme
    # and KEDA reads host and port from the same variables, and the database from the ConfigMap
    host_port = ("hostFromEnv", "portFromEnv") if scheme == "redis" else SENTINEL_HOST_PORT
    for scaled in _of_kind("ScaledObject", root):
        meta = scaled["spec"]["triggers"][0]["metadata"]
        assert (meta[host_port[0]], meta[host_port[1]]) == ("REDIS_HOST", "REDIS_PORT")
        assert meta["databaseIndex"] == data["REDIS_DB"]
        assert "address" not in meta and "addressFromEnv" not in meta


#: Where KEDA's Redis Sentinel scaler reads the sentinels' hosts and ports from.
SENTINEL_HOST_PORT = ("hostsFromEnv", "portsFromEnv")


@pytest.mark.parametrize(
    "root", [K8S, OVERLAY, SENTINEL], ids=["base", "production-overlay", "sentinel-overlay"]
)
def test_given_a_variable_made_of_others_when_rendered_then_they_are_defined_before_it(
    root: Path,
) -> None:
    # Kubernetes expands $(NAME) only with variables defined before it (envFrom, or earlier in
    # env); a later one stays the literal "$(NAME)", and REDIS_URL would carry it as a password.
    for workload in _workloads(root):
        for container in _pod(workload)["containers"]:
            defined = set()
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    defined |= set(
                        _named("ConfigMap", source["configMapRef"]["name"], root)["data"]
                    )
            for entry in container.get("env", []):
                used = set(re.findall(r"\$\((\w+)\)", entry.get("value", "")))
                assert used <= defined, (
                    workload["metadata"]["name"],
                    entry["name"],
                    used - defined,
                )
                defined.add(entry["name"])


def test_given_the_sentinel_component_when_rendered_then_pods_and_keda_follow_the_master(
    tmp_path: Path,
) -> None:
    data = _named("ConfigMap", "aipool-config", SENTINEL)["data"]
    # Given the sentinel overlay: the sentinels' Service and port, and the master's name
    assert data["REDIS_PORT"] == "26379" and data["AIPOOL_REDIS_SENTINEL_MASTER"]
    # Then each pod's REDIS_URL, as the image's entrypoint puts it together from the ConfigMap and
    # the mounted password, names the sentinels, and the pool takes its settings
    from aipool.settings import read_settings

    password = tmp_path / "redis_password"
    password.write_text("pw\n")
    for workload in _workloads(SENTINEL):
        for container in _pod(workload)["containers"]:
            env = effective_env(container, SENTINEL)
            if "REDIS_PASSWORD_FILE" not in env:
                continue
            parts = {k: env[k] for k in ("REDIS_SCHEME", "REDIS_HOST", "REDIS_PORT", "REDIS_DB")}
            shown = subprocess.run(
                [str(ROOT / "deploy/entrypoint.sh"), "sh", "-c", 'printf %s "$REDIS_URL"'],
                env={"PATH": os.environ["PATH"], **parts, "REDIS_PASSWORD_FILE": str(password)},
                capture_output=True,
                text=True,
                check=True,
            )
            url = shown.stdout
            assert url.startswith("sentinel://:pw@"), url
            master = env["AIPOOL_REDIS_SENTINEL_MASTER"]
            reading = read_settings({"REDIS_URL": url, "AIPOOL_REDIS_SENTINEL_MASTER": master})
            assert reading.problems == [], workload["metadata"]["name"]
    # And KEDA measures every list on the master the same sentinels name
    for scaled in _of_kind("ScaledObject", SENTINEL):
        (trigger,) = scaled["spec"]["triggers"]
        assert trigger["type"] == "redis-sentinel"
        assert trigger["metadata"]["sentinelMasterFromEnv"] == "AIPOOL_REDIS_SENTINEL_MASTER"
        assert "hostFromEnv" not in trigger["metadata"]
    # And every pool pod may reach the sentinels as well as the master
    for workload in _workloads(SENTINEL):
        assert {6379, 26379} <= _allowed_ports(workload, "Egress", SENTINEL)


def test_given_the_scaled_objects_when_rendered_then_each_scales_a_provider_on_its_whole_list() -> (
    None
):
    scaled = _of_kind("ScaledObject")
    deployments = {d["metadata"]["name"]: d for d in _of_kind("Deployment")}
    auths = {a["metadata"]["name"] for a in _of_kind("TriggerAuthentication")}
    targets = [s["spec"]["scaleTargetRef"]["name"] for s in scaled]
    assert len(targets) == len(set(targets))
    listed = set()
    for obj in scaled:
        spec = obj["spec"]
        deployment = deployments[spec["scaleTargetRef"]["name"]]
        (trigger,) = spec["triggers"]
        meta = trigger["metadata"]
        assert trigger["type"] == "redis"
        # the list is the Celery queue that very Deployment consumes: with priorities off on the
        # Redis broker it holds every message of the queue, whatever its priority
        assert _queues(deployment) == [meta["listName"]]
        assert celeryconfig.transport_options("redis://r:6379/0")["priority_steps"] == [0]
        listed.add(meta["listName"])
        assert int(meta["listLength"]) >= 1 and int(meta["activationListLength"]) >= 0
        assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
        # when Redis cannot be read, the queue keeps enough replicas rather than freezing
        fallback = spec["fallback"]
        assert fallback["failureThreshold"] >= 1
        assert spec["minReplicaCount"] <= fallback["replicas"] <= spec["maxReplicaCount"]
        assert trigger["authenticationRef"]["name"] in auths
        assert "replicas" not in deployment["spec"]
    # every provider lane, routine and urgent (routers are fixed, not scaled)
    assert listed == set(PROVIDERS) | {urgent_lane(p) for p in PROVIDERS}
    maxima = {
        s["spec"]["triggers"][0]["metadata"]["listName"]: s["spec"]["maxReplicaCount"]
        for s in scaled
    }
    assert maxima["ollama"] <= 2 and maxima[urgent_lane("ollama")] <= 2
    assert all(maxima[q] > maxima["ollama"] for q in OWN_KEY)
    # an urgent lane adds a replica for every message waiting: it never builds a backlog
    assert all(
        s["spec"]["triggers"][0]["metadata"]["listLength"] == "1"
        for s in scaled
        if is_urgent_lane(s["spec"]["triggers"][0]["metadata"]["listName"])
    )


def test_given_flower_when_rendered_then_its_login_comes_from_its_environment_only() -> None:
    flower = _named("Deployment", "aipool-flower")
    (container,) = _pod(flower)["containers"]
    argv = " ".join(_argv(container))
    assert "basic_auth" not in argv and "FLOWER_BASIC_AUTH" not in argv
    env = effective_env(container)
    login = env["FLOWER_BASIC_AUTH_FILE"]
    assert secret_files(flower, container)[login] == "aipool-flower/basic-auth"
    # one process, metrics in memory: a multiprocess directory would fail on every event
    assert "PROMETHEUS_MULTIPROC_DIR" not in env
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthcheck"
    service = _named("Service", "aipool-flower")
    assert [p["port"] for p in service["spec"]["ports"]] == [5555]


def test_given_the_workers_when_rendered_then_each_owns_its_metrics_directory() -> None:
    for queue, deployment in _workers().items():
        (container,) = _pod(deployment)["containers"]
        directory = effective_env(container)["PROMETHEUS_MULTIPROC_DIR"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        (volume,) = [v for v in _pod(deployment)["volumes"] if v["name"] == mounts[directory]]
        assert "emptyDir" in volume, queue


@pytest.mark.parametrize("root", [K8S, OVERLAY], ids=["base", "production-overlay"])
def test_given_the_workers_when_rendered_then_their_metrics_ask_for_the_token_prometheus_has(
    root: Path,
) -> None:
    # Given every worker: the metrics token is the aipool-metrics Secret's file in the secrets
    # directory, where the settings read AIPOOL_METRICS_TOKEN from, and nothing serves anyone
    for queue, deployment in _workers(root).items():
        (container,) = _pod(deployment)["containers"]
        env = effective_env(container, root)
        files = secret_files(deployment, container)
        assert files[f"{env['AIPOOL_SECRETS_DIR']}/aipool_metrics_token"] == "aipool-metrics/token"
        assert "AIPOOL_ALLOW_ANONYMOUS" not in env and "AIPOOL_METRICS_TOKEN" not in env, queue
    # and the PodMonitor scrapes with that Secret's token
    (monitor,) = _of_kind("PodMonitor", root)
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": "aipool-metrics", "key": "token"},
    }
    # and the template of that Secret says which key it holds
    templates = [d for d in yaml.safe_load_all((K8S / "secrets.yaml").read_text()) if d]
    (secret,) = [d for d in templates if d["metadata"]["name"] == "aipool-metrics"]
    assert secret["stringData"] == {"token": ""}


def test_given_the_health_endpoint_when_rendered_then_its_service_reaches_the_usage_report() -> (
    None
):
    health = _named("Deployment", "aipool-health")
    (container,) = _pod(health)["containers"]
    argv = _argv(container)
    assert argv[:3] == ["aipool", "status", "--serve"]
    assert argv[argv.index("--port") + 1] == "8088"
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert "httpGet" not in container["livenessProbe"]
    # the report's bearer token is the Secret's file in the secrets directory, where the settings
    # read AIPOOL_HEALTH_TOKEN from
    directory = effective_env(container)["AIPOOL_SECRETS_DIR"]
    files = secret_files(health, container)
    assert files[f"{directory}/aipool_health_token"] == "aipool-health/token"


def test_given_the_services_when_rendered_then_each_selects_pods_of_a_deployment() -> None:
    pod_labels = [dict(_pod_labels(d)) for d in _of_kind("Deployment")]
    for service in _of_kind("Service"):
        selector = service["spec"]["selector"].items()
        assert any(selector <= labels.items() for labels in pod_labels), service["metadata"]


def test_given_the_config_map_when_rendered_then_it_holds_no_secret_and_is_read_by_every_pod() -> (
    None
):
    config = _named("ConfigMap", "aipool-config")
    data = config["data"]
    assert not [k for k in data if re.search(r"API_KEY|PASSWORD|TOKEN|SECRET$", k)]
    assert "REDIS_URL" not in data and "DATABASE_URL" not in data
    assert data["AIPOOL_TIMEZONE"] == "Asia/Taipei"
    assert data["OLLAMA_BASE_URL"].startswith("http://")
    for workload in _workloads():
        for container in _pod(workload)["containers"]:
            assert {"configMapRef": {"name": "aipool-config"}} in container["envFrom"]


def test_given_the_dashboard_when_rendered_then_grafanas_sidecar_loads_it_as_kept() -> None:
    dashboard = _named("ConfigMap", "aipool-grafana-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    kept = (K8S / "monitoring/grafana/aipool.json").read_text(encoding="utf-8")
    assert json.loads(dashboard["data"]["aipool.json"]) == json.loads(kept)


def unpinned_images(objects: tuple[dict[str, Any], ...]) -> list[str]:
    """The images of rendered workloads named without a digest (a tag alone can be re-pushed)."""
    return sorted(
        {
            c["image"]
            for o in objects
            if o["kind"] in ("Deployment", "Job")
            for c in _pod(o)["containers"] + _pod(o).get("initContainers", [])
            if not re.search(r"@sha256:[0-9a-f]{64}$", c["image"])
        }
    )


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: p.name)
def test_given_an_environments_overlay_when_rendered_then_every_image_is_pinned_by_digest(
    overlay: Path,
) -> None:
    assert OVERLAYS
    assert unpinned_images(_objects(overlay)) == []


def test_given_an_overlay_naming_a_tag_without_a_digest_when_checked_then_it_is_refused(
    tmp_path: Path,
) -> None:
    # Given an environment's overlay that pins the image by tag only
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [os.path.relpath(K8S, tmp_path)],
                "images": [{"name": "aipool", "newName": "registry.example/aipool", "newTag": "1"}],
            }
        ),
        encoding="utf-8",
    )
    # When its rendered workloads are checked
    # Then the tag is named as unpinned
    assert unpinned_images(_objects(tmp_path)) == ["registry.example/aipool:1"]


@pytest.mark.parametrize("root", [K8S, *OVERLAYS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_given_the_rendered_manifests_when_read_then_no_container_takes_a_secret_through_env(
    root: Path,
) -> None:
    for workload in _workloads(root):
        pod = _pod(workload)
        for container in pod["containers"] + pod.get("initContainers", []):
            name = f"{workload['metadata']['name']}/{container['name']}"
            # Then no variable is filled from a Secret, and no Secret is imported whole
            assert not [
                e for e in container.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})
            ], name
            assert not [s for s in container.get("envFrom", []) if "secretRef" in s], name
            # and every secret file a variable names is mounted read-only, from a Secret
            files = secret_files(workload, container)
            for entry in container.get("env", []):
                if entry["name"].endswith("_FILE"):
                    assert entry["value"] in files, (name, entry)
            for mount in container.get("volumeMounts", []):
                if any(f.startswith(f"{mount['mountPath']}/") for f in files):
                    assert mount["readOnly"] is True and mount["mountPath"] == SECRETS_DIR, name
            # and the secret files are readable by the pod's group only
            for volume in pod.get("volumes", []):
                if _secret_sources(volume):
                    mode = volume.get("projected", volume.get("secret", {}))["defaultMode"]
                    assert mode == 0o440 and pod["securityContext"]["fsGroup"] == 10001, name


@pytest.mark.parametrize("root", [K8S, *OVERLAYS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_given_the_network_policies_when_rendered_then_every_egress_rule_names_its_destinations(
    root: Path,
) -> None:
    for policy in _of_kind("NetworkPolicy", root):
        name = policy["metadata"]["name"]
        for rule in policy["spec"].get("egress", []):
            # Then every rule has destinations, and only the provider HTTPS rule opens public
            # addresses (private ranges excepted); every other peer is pods by label or a CIDR
            assert rule.get("to"), (name, rule)
            for peer in rule["to"]:
                block = peer.get("ipBlock")
                if block is None:
                    assert peer["podSelector"], (name, peer)
                elif block["cidr"] == "0.0.0.0/0":
                    assert name == PROVIDER_HTTPS_POLICY, name
                    assert [p["port"] for p in rule["ports"]] == [443]
                    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"} <= set(block["except"])
                else:
                    prefix = int(block["cidr"].split("/")[1])
                    assert prefix >= 24, (name, block)
