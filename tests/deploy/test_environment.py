"""Every environment variable the pool reads is set where it must be, in compose and in Kubernetes.

The code is scanned for the names it reads (``os.environ``, ``getenv``, mappings of the
environment: every string constant shaped like one of the pool's variable names, and the
prefixes of names it builds, such as ``AIPOOL_TIMEOUT_<PROVIDER>``). Each name is either required
for some roles, with the roles named, or has a default that is right in a deployment. A name the
code reads that is neither fails here until someone decides; a required name missing from a role's
container in docker-compose.yml or in the rendered kustomization fails too, and so does a variable
a deployment sets that nothing reads (a typo is a setting that silently does not apply).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from aipool.providers.catalog import PROVIDERS
from aipool.settings.names import RETIRED
from tests.deploy import test_k8s as k8s

ROOT = Path(__file__).resolve().parents[2]
#: The code that runs in a deployed container (the simulator and the demo are development tools).
SOURCES = [
    *(p for d in ("aipool", "workers", "tasks", "schedules") for p in (ROOT / d).rglob("*.py")),
    ROOT / "celeryconfig.py",
]
EXCLUDED = ("aipool/simulator/", "aipool/demo", "aipool/cli/demo.py")
NAME = re.compile(
    r"(AIPOOL|REDIS|DATABASE|CELERY|OLLAMA|GEMINI|ANTHROPIC|NVIDIA|PROMETHEUS|FLOWER)_[A-Z0-9_]*"
)

ROLES = ("router", *PROVIDERS, "maintenance", "beat", "flower", "health", "migrate")
WORKERS = ("router", *PROVIDERS, "maintenance")
#: Where each provider's key must reach (as a secret file), by queue.
KEY_FILES = {
    "gemini": "gemini_api_key",
    "claude": "anthropic_api_key",
    "nemotron": "nvidia_api_key",
}

#: Variables a deployment must set, and the roles whose containers must have them.
REQUIRED: dict[str, tuple[str, ...]] = {
    # the broker, results, breakers and quotas: unset would mean an embedded Redis per container
    "REDIS_URL": tuple(r for r in ROLES if r != "migrate"),
    # the ledger: unset would mean a SQLite file inside each container
    "DATABASE_URL": (*WORKERS, "beat", "health", "migrate"),
    # the calendar of quotas and roll-ups must be the same everywhere
    "AIPOOL_TIMEZONE": ROLES,
    # a container's own 127.0.0.1 is no Ollama server
    "OLLAMA_BASE_URL": ("ollama",),
    "GEMINI_BASE_URL": ("gemini",),
    "ANTHROPIC_BASE_URL": ("claude",),
    "NVIDIA_BASE_URL": ("nemotron",),
    # prefork children's metrics, summed by the parent on the metrics port
    "PROMETHEUS_MULTIPROC_DIR": WORKERS,
    "AIPOOL_METRICS_PORT": WORKERS,
    # Flower's login
    "FLOWER_BASIC_AUTH": ("flower",),
}
#: Variables the code reads whose default is right in a deployment (or that are optional).
DEFAULT_OK: dict[str, str] = {
    "CELERY_BROKER_URL": "Redis (REDIS_URL) unless RabbitMQ is chosen (docs/operations.md)",
    "CELERY_RESULT_BACKEND": "always REDIS_URL",
    "AIPOOL_SECRETS_DIR": "/run/secrets, where compose mounts secrets (k8s sets a sub-directory)",
    "GEMINI_API_KEY": "read from its secret file",
    "ANTHROPIC_API_KEY": "read from its secret file",
    "NVIDIA_API_KEY": "read from its secret file",
    "OLLAMA_API_KEY": "only behind an authenticating proxy",
    "AIPOOL_TASK_SOFT_TIME_LIMIT": "90 s",
    "AIPOOL_TASK_TIME_LIMIT": "120 s (grace periods are 150 s)",
    "AIPOOL_VISIBILITY_TIMEOUT": "hard limit + 60 s",
    "AIPOOL_RESULT_EXPIRES": "an hour",
    "AIPOOL_REDIS_CONNECT_TIMEOUT": "5 s",
    "AIPOOL_REDIS_SOCKET_TIMEOUT": "5 s",
    "AIPOOL_REDIS_SENTINEL_MASTER": "only with a sentinel:// REDIS_URL (the redis-sentinel component)",
    "AIPOOL_REDIS_SENTINEL_PASSWORD": "only for sentinels that ask for a password of their own",
    "AIPOOL_REDIS_REPLICA_ACKS": "0: deciding writes replicate asynchronously (docs/attempts.md)",
    "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": "0.1 s, read only with AIPOOL_REDIS_REPLICA_ACKS",
    "AIPOOL_REDIS_REPLICA_ACK_REQUIRED": "off: a replica behind never stops a paid call",
    "AIPOOL_LIMITS_FILE": "ADR-006 limits",
    "AIPOOL_PRICES_FILE": "the packaged price table",
    "AIPOOL_ROUTES_FILE": "the packaged route table",
    "AIPOOL_ROUTING_MODEL_FILE": "the packaged intent model",
    "AIPOOL_MAX_PROMPT_TOKENS": "32000",
    "AIPOOL_RATE_LIMIT_PAUSE_MAX_S": "300 s, the longest a provider's declared retry delay pauses it",
    "AIPOOL_MONTHLY_BUDGET_USD": "ADR-006's $10",
    "AIPOOL_CLOUD_SPEND_CAP_USD": "no cap: an operator's decision",
    "AIPOOL_SAVING_THRESHOLD": "0.9 of a day's tokens or the month's budget",
    "AIPOOL_SAVING_BELOW_PRIORITY": "normal: only low-priority work is held back",
    "AIPOOL_ALERT_LANG": "zh-TW",
    "AIPOOL_STATIC_ANSWER": "ADR-006's text",
    "AIPOOL_REFUSAL_MESSAGE": "the packaged text",
    "AIPOOL_NEMOTRON_SYSTEM_PREFIX": "detailed thinking off",
    "AIPOOL_DATA_DIR": "only the embedded Redis uses it",
    "AIPOOL_RUNTIME_DIR": "only the embedded Redis uses it",
    "AIPOOL_ENV": "development; the image sets production, which refuses the embedded Redis",
    "AIPOOL_DEMO_DIR": "only the demo uses it",
    "AIPOOL_SIMULATOR_ADMIN_URL": "only the simulator's clients use it",
    "AIPOOL_ALERTS": "the pool sends budget alerts unless Prometheus does (docs/operations.md)",
    "AIPOOL_SLACK_WEBHOOK_URL": "an optional alert channel",
    "AIPOOL_ALERT_WEBHOOK_URL": "an optional alert channel",
    "AIPOOL_SMTP_PASSWORD": "an optional alert channel",
    "AIPOOL_HEALTH_TOKEN": "the usage report's bearer token: the aipool-health Secret on k8s, the "
    "aipool_health_token secret file in compose (empty: the usage report does not start)",
    "AIPOOL_METRICS_TOKEN": "the workers' metrics bearer token: the aipool-metrics Secret on k8s, "
    "the aipool_metrics_token secret file in compose (empty: a worker does not start)",
    "AIPOOL_METRICS_HOST": "every interface (0.0.0.0): Prometheus scrapes the workers from outside "
    "their containers; one address only where a scraper on the same host reads them",
    "FLOWER_ADDRESS": "loopback; compose and k8s give Flower --address=0.0.0.0 (tests/deploy/test_servers.py)",
    "FLOWER_PORT": "5555; compose and k8s give --port",
    "FLOWER_AUTH": "OAuth instead of FLOWER_BASIC_AUTH, optional",
    "AIPOOL_ALLOW_ANONYMOUS": "off: Flower, the usage report and the workers' metrics refuse to "
    "start without a login",
    "AIPOOL_FLOWER_SHOWS_ANSWERS": "off: Flower shows no answers",
    "AIPOOL_TASK_EVENTS": "on, for Flower; off saves their cost, and a Flower turns them on",
    "AIPOOL_CACHE_SECRET": "unset: the response cache is off (docs/operations.md, Response cache)",
    "AIPOOL_CACHE_MAX_BYTES": "the response cache's cap; 64 MiB",
    "AIPOOL_CACHE_MAX_TEMPERATURE": "the response cache's temperature limit; 0.5",
    "AIPOOL_CACHE_WAIT_S": "how long identical requests wait on the first's answer; 30 s",
    "AIPOOL_OTLP_ENDPOINT": "unset: no traces (the image does not ship the tracing extra)",
    "AIPOOL_TRACE_FILE": "unset: no traces; the demo writes one",
}
#: Families of names the code builds from a prefix (``AIPOOL_TIMEOUT_<PROVIDER>``): all optional.
OPTIONAL_PREFIXES = ("AIPOOL_TIMEOUT_", "AIPOOL_MODEL_", "AIPOOL_SMTP_")
#: Variables a deployment sets that other programs read: Kubernetes' REDIS_URL parts (and KEDA)
#: and the password file, which the image's entrypoint reads (as every <NAME>_FILE), Python.
READ_ELSEWHERE = {"REDIS_HOST", "REDIS_PORT", "REDIS_DB", "REDIS_PASSWORD", "PYTHONUNBUFFERED"}


def _read_by_code() -> tuple[set[str], set[str]]:
    """(names, prefixes) of the environment variables the deployed code reads."""
    names: set[str] = set()
    prefixes: set[str] = set()
    for path in SOURCES:
        if path.relative_to(ROOT).as_posix().startswith(EXCLUDED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.JoinedStr) and node.values:
                head = node.values[0]
                if isinstance(head, ast.Constant) and NAME.fullmatch(str(head.value)):
                    prefixes.add(str(head.value))
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and NAME.fullmatch(node.value)
            ):
                (prefixes if node.value.endswith("_") else names).add(node.value)
    return names, prefixes


def _harness() -> tuple[frozenset[str], tuple[str, ...]]:
    """Variables of the test and benchmark harnesses, which no deployed process reads."""
    try:
        from aipool.settings.names import HARNESS_NAMES, HARNESS_PREFIXES
    except ImportError:  # before the settings model listed them, no deployed module named them
        return frozenset(), ()
    return frozenset(HARNESS_NAMES), tuple(HARNESS_PREFIXES)


def _known(name: str) -> bool:
    return name in REQUIRED or name in DEFAULT_OK or name.startswith(OPTIONAL_PREFIXES)


def test_given_the_code_when_scanned_then_every_variable_it_reads_is_decided() -> None:
    names, prefixes = _read_by_code()
    assert "REDIS_URL" in names and "AIPOOL_TIMEOUT_" in prefixes  # the scan finds what it must
    harness, harness_prefixes = _harness()
    # A retired name is in the code only to be refused with its reason: nothing may set it.
    deployed = {
        n
        for n in names
        if n not in harness and not n.startswith(harness_prefixes) and n not in RETIRED
    }
    undecided = sorted(n for n in deployed if not _known(n))
    assert not undecided, (
        f"{undecided}: say in tests/deploy/test_environment.py whether compose and k8s must set it"
    )
    assert not sorted(
        p
        for p in prefixes
        if p != "AIPOOL_" and not p.startswith(OPTIONAL_PREFIXES) and p not in harness_prefixes
    )


# -- compose -----------------------------------------------------------------------------------


def _compose_services() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]


def _compose_role(role: str) -> dict[str, Any]:
    services = _compose_services()
    return services[f"worker-{role}" if role in WORKERS else role]


def _compose_env(service: dict[str, Any]) -> set[str]:
    """Names the container's command sees: its environment, and NAME for each NAME_FILE (the
    image's entrypoint exports it from the file)."""
    env = set(service.get("environment", {}))
    return env | {n[: -len("_FILE")] for n in env if n.endswith("_FILE")}


@pytest.mark.parametrize("role", ROLES)
def test_given_a_compose_service_when_started_then_its_required_variables_are_set(
    role: str,
) -> None:
    service = _compose_role(role)
    env = _compose_env(service)
    missing = sorted(n for n, roles in REQUIRED.items() if role in roles and n not in env)
    assert not missing, f"{role}: {missing}"
    # every file the entrypoint reads is a mounted secret
    secrets = set(service.get("secrets", []))
    for name, value in service.get("environment", {}).items():
        if name.endswith("_FILE"):
            assert value.startswith("/run/secrets/") and value.rsplit("/", 1)[1] in secrets, name
    # and a cloud worker's key reaches it as a secret file
    if role in KEY_FILES:
        assert KEY_FILES[role] in secrets
    # Flower is one process: a multiprocess metrics directory would break its metrics
    if role == "flower":
        assert "PROMETHEUS_MULTIPROC_DIR" not in env


def test_given_the_compose_file_when_read_then_it_sets_nothing_the_code_does_not_read() -> None:
    names, _ = _read_by_code()
    for name, service in _compose_services().items():
        if "aipool" not in str(service.get("image", "")):
            continue
        for variable in service.get("environment", {}):
            base = variable.removesuffix("_FILE")
            assert base in names or base in READ_ELSEWHERE or _known(base), (name, variable)


# -- kubernetes --------------------------------------------------------------------------------


def _k8s_role(role: str) -> dict[str, Any]:
    if role in WORKERS:
        return k8s._workers()[role]
    kind = "Job" if role == "migrate" else "Deployment"
    return k8s._named(kind, f"aipool-{role}")


@pytest.mark.parametrize("root", [k8s.K8S, k8s.OVERLAY], ids=["base", "production-overlay"])
@pytest.mark.parametrize("role", ROLES)
def test_given_a_k8s_container_when_started_then_its_required_variables_are_set(
    role: str, root: Path
) -> None:
    workload = _k8s_role(role) if root == k8s.K8S else _overlay_role(role)
    (container,) = k8s._pod(workload)["containers"]
    env = k8s.effective_env(container, root)
    missing = sorted(n for n, roles in REQUIRED.items() if role in roles and not env.get(n))
    assert not missing, f"{role}: {missing}"
    # a variable built from others names only variables set before it
    for value in env.values():
        for reference in re.findall(r"\$\(([A-Z_]+)\)", value):
            assert env.get(reference), (role, reference)
    if role in KEY_FILES:
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert env["AIPOOL_SECRETS_DIR"] in mounts
    if role == "flower":
        assert "PROMETHEUS_MULTIPROC_DIR" not in env


def _overlay_role(role: str) -> dict[str, Any]:
    if role in WORKERS:
        return k8s._workers(k8s.OVERLAY)[role]
    kind = "Job" if role == "migrate" else "Deployment"
    return k8s._named(kind, f"aipool-{role}", k8s.OVERLAY)


def test_given_the_manifests_when_rendered_then_they_set_nothing_the_code_does_not_read() -> None:
    names, _ = _read_by_code()
    for workload in k8s._workloads():
        for container in k8s._pod(workload)["containers"]:
            for variable in k8s.effective_env(container):
                base = variable.removesuffix("_FILE")
                assert base in names or base in READ_ELSEWHERE or _known(base), (
                    workload["metadata"]["name"],
                    variable,
                )
