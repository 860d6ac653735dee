"""docker-compose.yml: what an operator running the stack on one host relies on.

No Docker engine runs here, so the stack is validated, not run: ``docker-compose config`` accepts
it (with and without the simulator profile, with the host's Ollama), and the parsed file is read as
an SRE would: one worker per queue, one beat, Ollama with its models before its worker, keys and
passwords only as secret files, loopback ports, resource limits, hardened containers, migrations
before workers, Prometheus with the rules and Grafana with the dashboard.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

import celeryconfig
from aipool.chains import default_model
from aipool.lanes import queue_of
from celeryconfig import QUEUES

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ALERT_RULES = ROOT / "k8s/monitoring/prometheusrule.yaml"

#: The key file each cloud queue's worker needs (compose secret names = /run/secrets/<name>).
OWN_KEY = {"gemini": "gemini_api_key", "claude": "anthropic_api_key", "nemotron": "nvidia_api_key"}
#: Services that run the pool's own image (every one but the stores, Ollama and monitoring).
THIRD_PARTY = {"redis", "postgres", "ollama", "ollama-pull", "prometheus", "grafana"}
#: The sentinel profile: a replica of ``redis`` and three sentinels (Redis's own image).
SENTINEL_PROFILE = {"redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"}
THIRD_PARTY |= SENTINEL_PROFILE

KEY_LOOKING = re.compile(
    r"AIza[0-9A-Za-z_\-]{20,}|sk-ant-[0-9A-Za-z_\-]{8,}|sk-[0-9A-Za-z]{20,}|nvapi-[0-9A-Za-z_\-]{8,}"
)
SITE_ADDRESS = "192.168."


def _compose() -> dict[str, Any]:
    docs = list(yaml.safe_load_all(COMPOSE.read_text(encoding="utf-8")))
    assert len(docs) == 1
    return docs[0]


SERVICES: dict[str, dict[str, Any]] = _compose()["services"]


def _argv(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def _worker_queues(service: dict[str, Any]) -> list[str]:
    """The queues a ``celery worker`` service consumes (``-Q a,b``), empty for other services."""
    argv = _argv(service)
    if "worker" not in argv:
        return []
    return argv[argv.index("-Q") + 1].split(",")


def _workers() -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in SERVICES.items() if _worker_queues(svc)}


def _worker_for(queue: str) -> dict[str, Any]:
    (service,) = [s for s in _workers().values() if queue in _worker_queues(s)]
    return service


def _secret_names(service: dict[str, Any]) -> set[str]:
    return {s if isinstance(s, str) else s["source"] for s in service.get("secrets", [])}


def _aipool_services() -> dict[str, dict[str, Any]]:
    return {name: svc for name, svc in SERVICES.items() if name not in THIRD_PARTY}


def _docker_compose(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    program = shutil.which("docker-compose")
    assert program, "docker-compose is not installed (apt-get install docker-compose)"
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_FILE", "_BIND"))}
    return subprocess.run(
        [program, "-f", str(COMPOSE), *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("profile", "env"),
    [
        ((), {}),
        (("--profile", "simulator"), {"OLLAMA_REPLICAS": "0", "OLLAMA_MODELS": ""}),
        ((), {"OLLAMA_BASE_URL": "http://host.docker.internal:11434", "OLLAMA_REPLICAS": "0"}),
        (("--profile", "sentinel"), {}),
    ],
    ids=["default", "simulator", "host-ollama", "sentinel"],
)
def test_given_the_compose_file_when_docker_compose_checks_it_then_it_is_valid(
    profile: tuple[str, ...], env: dict[str, str]
) -> None:
    # When docker-compose resolves the file as `up` would
    result = _docker_compose(*profile, "config", **env)
    # Then it accepts it, with nothing required left unset
    assert result.returncode == 0, result.stderr
    resolved = yaml.safe_load(result.stdout)
    assert set(resolved["services"]) >= set(SERVICES) - {"simulator"}
    if env.get("OLLAMA_REPLICAS") == "0":
        assert resolved["services"]["ollama"]["deploy"]["replicas"] == 0


def test_given_compose_when_parsed_then_every_queue_has_exactly_one_worker_service() -> None:
    consumers: dict[str, list[str]] = {}
    for name, service in _workers().items():
        for queue in _worker_queues(service):
            consumers.setdefault(queue, []).append(name)
    assert set(consumers) == set(QUEUES)
    assert all(len(names) == 1 for names in consumers.values()), consumers


def test_given_compose_when_parsed_then_there_is_exactly_one_beat_with_a_kept_schedule() -> None:
    beats = [name for name, svc in SERVICES.items() if "beat" in _argv(svc)]
    assert len(beats) == 1
    beat = SERVICES[beats[0]]
    assert beat["deploy"]["replicas"] == 1
    assert "profiles" not in beat
    # its schedule is on a named volume, not in the container's temporary space
    (schedule,) = [a.split("=", 1)[1] for a in _argv(beat) if a.startswith("--schedule=")]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in beat["volumes"]}
    assert str(Path(schedule).parent) in mounts
    assert mounts[str(Path(schedule).parent)] in _compose()["volumes"]


@pytest.mark.parametrize("queue", QUEUES)
def test_given_a_worker_when_started_then_it_prefetches_one_stops_gracefully_and_is_pinged(
    queue: str,
) -> None:
    # Given
    service = _worker_for(queue)
    argv = _argv(service)
    # Then: the worker holds only the message it is working on
    assert "--prefetch-multiplier=1" in argv or "--disable-prefetch" in argv
    # a redeploy lets the hop in hand finish: the grace period outlasts the hard task limit
    grace = service["stop_grace_period"]
    assert grace.endswith("s") and int(grace[:-1]) > celeryconfig.task_time_limit
    # and the healthcheck pings this very worker under the node name it starts with, with the
    # connection settings the entrypoint reads from the secret files
    assert argv[argv.index("-n") + 1] == f"{queue}@%h"
    check = " ".join(service["healthcheck"]["test"])
    assert check.startswith("CMD-SHELL aipool-entrypoint celery")
    assert f"inspect ping -d {queue}@$$HOSTNAME" in check


def test_given_the_workers_when_started_then_each_waits_for_its_stores_and_the_migration() -> None:
    migrate = SERVICES["migrate"]
    assert _argv(migrate) == ["aipool", "migrate"]
    assert migrate["restart"] == "no"
    for name, service in {**_workers(), "beat": SERVICES["beat"]}.items():
        depends = service["depends_on"]
        assert depends["redis"]["condition"] == "service_healthy", name
        assert depends["postgres"]["condition"] == "service_healthy", name
        assert depends["migrate"]["condition"] == "service_completed_successfully", name


def test_given_compose_when_read_then_ollama_runs_with_its_models_before_its_worker() -> None:
    # Given the bundled Ollama server, the official image pinned to a version
    ollama = SERVICES["ollama"]
    assert re.fullmatch(r"ollama/ollama:\d+\.\d+\.\d+@sha256:[0-9a-f]{64}", ollama["image"])
    assert "ollama-models:/root/.ollama" in ollama["volumes"]
    # and an init step that pulls the routing table's Ollama models into the server the workers use
    pull = SERVICES["ollama-pull"]
    assert pull["image"] == ollama["image"] and pull["restart"] == "no"
    assert pull["environment"]["OLLAMA_HOST"] == "${OLLAMA_BASE_URL:-http://ollama:11434}"
    models = pull["environment"]["OLLAMA_MODELS"].split("-", 1)[1].rstrip("}").split()
    assert set(models) == _ollama_models()
    # Then the ollama worker starts only after the models are there, and the worker's Ollama is
    # the bundled server unless an operator names the host's
    worker = _worker_for("ollama")
    assert worker["depends_on"]["ollama-pull"]["condition"] == "service_completed_successfully"
    assert worker["environment"]["OLLAMA_BASE_URL"] == "${OLLAMA_BASE_URL:-http://ollama:11434}"
    assert "host.docker.internal:host-gateway" in worker["extra_hosts"]
    # and the bundled server can be left out when the host's is used
    assert ollama["deploy"]["replicas"] == "${OLLAMA_REPLICAS:-1}"


def _ollama_models() -> set[str]:
    """Every Ollama model a request can be sent to: the route table's and the default one."""
    routes = tomllib.loads((ROOT / "aipool/routing/routes.toml").read_text(encoding="utf-8"))
    found = {default_model("ollama")}
    pending: list[Any] = [routes]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if value.get("provider") == "ollama" and "model" in value:
                found.add(value["model"])
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return found


def test_given_the_ollama_worker_when_inspected_then_it_holds_no_cloud_key() -> None:
    service = _worker_for("ollama")
    env = service.get("environment", {})
    assert _secret_names(service) == {"redis_url", "database_url", "aipool_metrics_token"}
    assert not [k for k in env if "API_KEY" in k or "SECRET" in k or "TOKEN" in k]
    assert "--concurrency=2" in _argv(service)


def test_given_compose_when_inspected_then_each_cloud_worker_gets_only_its_own_key() -> None:
    compose = _compose()
    for name, service in SERVICES.items():
        queues = [queue_of(q) for q in _worker_queues(service)]
        expected = {OWN_KEY[q] for q in queues if q in OWN_KEY}
        assert _secret_names(service) & set(OWN_KEY.values()) == expected, name
        assert not [k for k in service.get("environment", {}) if k.endswith("API_KEY")], name
    for name in OWN_KEY.values():
        assert compose["secrets"][name]["file"] == f"${{{name.upper()}_FILE:-./secrets/{name}}}"


def test_given_compose_when_inspected_then_every_password_is_a_secret_file() -> None:
    # Given every value of every service's environment
    for name, service in SERVICES.items():
        env = service.get("environment", {})
        for key, value in env.items():
            # Then no password, URL with credentials or login is a plain value
            assert not re.search(r"PASSWORD$|BASIC_AUTH$|_URL$", key) or not re.search(
                r"://[^/]*:[^/]*@|^[^:]+:[^:/]+$", str(value)
            ), (name, key)
            assert "PASSWORD" not in key or key.endswith(("_FILE", "__FILE")), (name, key)
    # and every secret is a file under ./secrets unless the operator names another
    for name, secret in _compose()["secrets"].items():
        assert secret["file"] == f"${{{name.upper()}_FILE:-./secrets/{name}}}", name
    # and the stores read theirs from the mounted files
    assert SERVICES["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"].startswith("/run/secrets/")
    redis_command = " ".join(_argv(SERVICES["redis"]))
    assert "requirepass" in redis_command and "/run/secrets/redis_password" in redis_command


def test_given_redis_when_started_then_it_persists_refuses_eviction_and_needs_a_password() -> None:
    redis = SERVICES["redis"]
    command = " ".join(_argv(redis))
    assert "--appendonly yes" in command
    assert "--maxmemory-policy noeviction" in command
    assert "--maxmemory" in command
    assert "redis-data:/data" in redis["volumes"]
    # the password is written to a config file, never into redis-server's arguments
    assert "exec redis-server /tmp/redis.conf" in command
    assert "REDISCLI_AUTH" in " ".join(redis["healthcheck"]["test"])


def test_given_compose_when_inspected_then_the_image_is_built_once_and_run_by_every_service() -> (
    None
):
    builders = [name for name, svc in SERVICES.items() if "build" in svc]
    assert builders == ["migrate"]
    images = {svc["image"] for svc in _aipool_services().values()}
    assert images == {"${AIPOOL_IMAGE:-aipool:0.1.0}"}
    # third-party images are pinned to a version and its digest: a re-pushed tag changes nothing
    for name in THIRD_PARTY:
        image = SERVICES[name]["image"]
        assert re.search(r":v?\d+\.\d+(\.\d+)?(-alpine)?@sha256:[0-9a-f]{64}$", image), (
            name,
            image,
        )


def test_given_the_stores_when_inspected_then_they_run_releases_with_the_known_fixes() -> None:
    # The pool runs its own Lua on Redis: 7.4.6 fixed CVE-2025-49844 (a Lua use-after-free) and
    # 7.4.2 CVE-2024-46981; PostgreSQL 16.7 fixed CVE-2025-1094 and 16.5 CVE-2024-10979
    def version(name: str) -> tuple[int, ...]:
        tag = SERVICES[name]["image"].split(":", 1)[1].split("-", 1)[0].split("@", 1)[0]
        return tuple(int(n) for n in tag.split("."))

    assert (7, 4, 6) <= version("redis") < (7, 5)
    assert (16, 7) <= version("postgres") < (17,)


def test_given_compose_when_inspected_then_ports_are_bound_to_loopback_unless_asked() -> None:
    published = 0
    for name, service in SERVICES.items():
        for port in service.get("ports", []):
            published += 1
            bind = r"127\.0\.0\.1|\$\{[A-Z]+_BIND:-127\.0\.0\.1\}"
            assert re.match(rf"^({bind}):", str(port)), (name, port)
    assert published >= 5


def test_given_every_service_when_inspected_then_it_is_limited_and_hardened() -> None:
    for name, service in SERVICES.items():
        limits = service["deploy"]["resources"]["limits"]
        assert {"cpus", "memory"} <= set(limits), name
        assert service["read_only"] is True, name
        assert service["cap_drop"] == ["ALL"], name
        assert "no-new-privileges:true" in service["security_opt"], name
        # whatever must be written goes to a tmpfs or a volume
        assert any(t.startswith("/tmp") for t in service["tmpfs"]), name


def test_given_flower_when_started_then_its_login_comes_from_a_secret_not_its_arguments() -> None:
    flower = SERVICES["flower"]
    argv = " ".join(_argv(flower))
    assert "flower" in argv
    assert "basic_auth" not in argv and "FLOWER_BASIC_AUTH" not in argv
    env = flower["environment"]
    assert env["FLOWER_BASIC_AUTH_FILE"] == "/run/secrets/flower_basic_auth"
    assert "flower_basic_auth" in _secret_names(flower)
    # Flower keeps its metrics in memory: a multiprocess directory it does not own would fail
    assert "PROMETHEUS_MULTIPROC_DIR" not in env
    assert "/healthcheck" in " ".join(flower["healthcheck"]["test"])


def test_given_flower_when_prometheus_scrapes_it_then_with_the_metrics_token_flower_accepts() -> (
    None
):
    # Given Flower's /metrics, served to its login or the workers' metrics token (workers/flower.py)
    prometheus = SERVICES["prometheus"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in prometheus["volumes"]}
    config = yaml.safe_load((ROOT / mounted["/etc/prometheus/prometheus.yml"]).read_text())
    (flower_job,) = [j for j in config["scrape_configs"] if j["job_name"] == "aipool-flower"]
    # Then Prometheus sends the token from the secret file Flower reads it from too
    assert flower_job["authorization"] == {
        "type": "Bearer",
        "credentials_file": "/run/secrets/aipool_metrics_token",
    }
    assert "aipool_metrics_token" in _secret_names(SERVICES["flower"])
    assert "AIPOOL_ALLOW_ANONYMOUS" not in SERVICES["flower"]["environment"]


def test_given_the_entrypoint_when_a_secret_file_is_named_then_the_setting_is_exported(
    tmp_path: Path,
) -> None:
    # Given the secret files compose mounts
    (tmp_path / "redis_url").write_text("redis://:pw@redis:6379/0")
    (tmp_path / "auth").write_text("admin:pw")
    env = {
        "PATH": os.environ["PATH"],
        "REDIS_URL_FILE": str(tmp_path / "redis_url"),
        "FLOWER_BASIC_AUTH_FILE": str(tmp_path / "auth"),
        "DATABASE_URL": "postgresql+psycopg://already@set/aipool",
    }
    # When a command runs through the image's entrypoint
    out = subprocess.run(
        [str(ROOT / "deploy/entrypoint.sh"), "sh", "-c", "env"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    # Then it sees the settings, not the file names
    assert "REDIS_URL=redis://:pw@redis:6379/0" in out
    assert "FLOWER_BASIC_AUTH=admin:pw" in out
    assert "DATABASE_URL=postgresql+psycopg://already@set/aipool" in out
    assert not [line for line in out if line.startswith(("REDIS_URL_FILE", "FLOWER_BASIC_AUTH_F"))]


def _through_entrypoint(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / "deploy/entrypoint.sh"), "sh", "-c", "env"],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_given_kubernetes_redis_parts_and_a_password_file_when_the_entrypoint_runs_then_it_builds_redis_url(
    tmp_path: Path,
) -> None:
    # Given the ConfigMap's parts and the mounted password, one that URLs must escape
    (tmp_path / "redis_password").write_text("p@ss/w:rd#1\n")
    parts = {"REDIS_HOST": "redis", "REDIS_PORT": "6380", "REDIS_DB": "2"}
    env = {**parts, "REDIS_PASSWORD_FILE": str(tmp_path / "redis_password")}
    # When a command runs through the image's entrypoint
    out = _through_entrypoint(env).stdout.splitlines()
    # Then it sees REDIS_URL with the password percent-encoded, and not the file's name
    assert "REDIS_URL=redis://:p%40ss%2Fw%3Ard%231@redis:6380/2" in out
    assert not [line for line in out if line.startswith("REDIS_PASSWORD")]
    # and with TLS asked for, the scheme and the CA options the URL carries
    tls = {
        "REDIS_SCHEME": "rediss",
        "REDIS_URL_OPTIONS": "ssl_ca_certs=/ca.crt&ssl_cert_reqs=required",
    }
    out = _through_entrypoint({**env, **tls}).stdout.splitlines()
    assert (
        "REDIS_URL=rediss://:p%40ss%2Fw%3Ard%231@redis:6380/2?ssl_ca_certs=/ca.crt&ssl_cert_reqs=required"
        in out
    )


def test_given_a_password_file_but_no_redis_host_when_the_entrypoint_runs_then_it_says_so() -> None:
    result = _through_entrypoint({"REDIS_PASSWORD_FILE": "/dev/null"})
    assert result.returncode != 0
    assert "REDIS_HOST" in result.stderr and "names no Redis" in result.stderr


def test_given_prometheus_when_started_then_it_loads_exactly_the_pools_alert_rules() -> None:
    # Given Prometheus's mounts and configuration
    prometheus = SERVICES["prometheus"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in prometheus["volumes"]}
    config = yaml.safe_load((ROOT / mounted["/etc/prometheus/prometheus.yml"]).read_text())
    # Then the rule file it loads is the one the Kubernetes PrometheusRule is generated from
    assert config["rule_files"] == ["/etc/prometheus/rules/*.yml"]
    rules = mounted["/etc/prometheus/rules/ai-usage-alerts.yml"]
    # the file ADR-006 names
    assert rules == "./k8s/monitoring/prometheus/ai-usage-alerts.yaml"
    (rule,) = [d for d in yaml.safe_load_all(ALERT_RULES.read_text(encoding="utf-8")) if d]
    assert yaml.safe_load((ROOT / rules).read_text(encoding="utf-8")) == rule["spec"]
    # and it scrapes every worker's metrics port, keeping the metrics' own queue label
    (workers_job,) = [j for j in config["scrape_configs"] if j["job_name"] == "aipool-workers"]
    targets = {t for c in workers_job["static_configs"] for t in c["targets"]}
    assert targets == {f"{name}:9808" for name in _workers()}
    relabels = workers_job.get("relabel_configs", [])
    assert all(r.get("target_label") != "queue" for r in relabels)
    # with the token the workers' metrics ask for, from the secret file they read it from
    assert workers_job["authorization"] == {
        "type": "Bearer",
        "credentials_file": "/run/secrets/aipool_metrics_token",
    }
    assert "aipool_metrics_token" in _secret_names(prometheus)


def test_given_the_workers_when_started_then_their_metrics_ask_for_a_token_from_a_secret() -> None:
    # Given every worker: its metrics token is the aipool_metrics_token secret file (the settings
    # read /run/secrets/aipool_metrics_token), never a value in the file nor "allow anonymous"
    for name, worker in _workers().items():
        assert "aipool_metrics_token" in _secret_names(worker), name
        env = worker.get("environment") or {}
        assert "AIPOOL_METRICS_TOKEN" not in env and "AIPOOL_ALLOW_ANONYMOUS" not in env, name
    declared = _compose()["secrets"]["aipool_metrics_token"]
    assert declared["file"] == "${AIPOOL_METRICS_TOKEN_FILE:-./secrets/aipool_metrics_token}"


def test_given_grafana_when_started_then_it_is_provisioned_with_prometheus_and_the_dashboard() -> (
    None
):
    grafana = SERVICES["grafana"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in grafana["volumes"]}
    # the dashboard the monitoring manifests keep, loaded by a file provider from where it is
    dashboard = mounts["/var/lib/grafana/dashboards/aipool.json"]
    assert dashboard == "./k8s/monitoring/grafana/aipool.json"
    provisioning = ROOT / mounts["/etc/grafana/provisioning"]
    (provider,) = yaml.safe_load((provisioning / "dashboards/aipool.yml").read_text())["providers"]
    assert provider["options"]["path"] == "/var/lib/grafana/dashboards"
    (source,) = yaml.safe_load((provisioning / "datasources/prometheus.yml").read_text())[
        "datasources"
    ]
    assert source["url"] == "http://prometheus:9090" and source["type"] == "prometheus"
    assert grafana["environment"]["GF_SECURITY_ADMIN_PASSWORD__FILE"].startswith("/run/secrets/")


def test_given_the_health_service_when_started_then_it_serves_the_usage_endpoint() -> None:
    health = SERVICES["health"]
    argv = _argv(health)
    assert argv[:3] == ["aipool", "status", "--serve"]
    assert argv[argv.index("--port") + 1] == "8088"
    # its health check asks the probe path, which needs no token and shows nothing
    assert "/healthz" in " ".join(health["healthcheck"]["test"])
    # and the report's bearer token is a secret file, never a value in the file
    assert "aipool_health_token" in health["secrets"]


def test_given_the_sentinel_profile_when_read_then_one_master_one_replica_and_three_sentinels_agree() -> (
    None
):
    # Given the services of the sentinel profile
    profiled = {n for n, s in SERVICES.items() if "sentinel" in s.get("profiles", [])}
    # Then it is a replica and three sentinels, and a plain `up` starts none of them
    assert profiled == SENTINEL_PROFILE
    assert "profiles" not in SERVICES["redis"]
    # And the replica replicates `redis`, with its password, persisting and refusing eviction
    replica = " ".join(_argv(SERVICES["redis-replica"]))
    assert "--replicaof redis 6379" in replica and "masterauth" in replica
    assert "--appendonly yes" in replica and "--maxmemory-policy noeviction" in replica
    # and `redis` can follow the promoted replica after a failover (it knows the password)
    assert "masterauth" in " ".join(_argv(SERVICES["redis"]))
    # And each sentinel watches `redis` under the name the pool's processes are told, with a
    # quorum of two of the three, and the master's password from the secret file
    master = SERVICES["flower"]["environment"]["AIPOOL_REDIS_SENTINEL_MASTER"]
    assert master == SERVICES["beat"]["environment"]["AIPOOL_REDIS_SENTINEL_MASTER"]
    for name in ("sentinel-1", "sentinel-2", "sentinel-3"):
        sentinel = SERVICES[name]
        command = " ".join(_argv(sentinel))
        assert sentinel["environment"]["MASTER"] == master
        assert "sentinel monitor $$MASTER redis 6379 2" in command
        assert "sentinel auth-pass $$MASTER $$pw" in command
        assert "--sentinel" in command and "redis_password" in sentinel["secrets"]


def test_given_the_simulator_when_inspected_then_it_runs_only_in_its_profile() -> None:
    simulator = SERVICES["simulator"]
    assert simulator["profiles"] == ["simulator"]
    assert _argv(simulator) == ["aipool", "simulate", "--host", "0.0.0.0"]


def test_given_the_compose_file_when_scanned_then_it_holds_no_key_or_site_address() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    assert not KEY_LOOKING.findall(text)
    assert SITE_ADDRESS not in text
