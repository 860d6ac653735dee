"""Raw payloads a request pastes: Alertmanager, PagerDuty and Grafana webhooks, logs, stack traces,
``kubectl`` output, code and diffs. Used by :mod:`aipool.routing.corpus.generate` only."""

from __future__ import annotations

import json
import random


def alertmanager(rng: random.Random, service: str, alert: str, severity: str = "critical") -> str:
    """An Alertmanager v4 webhook body with one firing alert."""
    body = {
        "version": "4",
        "status": "firing",
        "receiver": rng.choice(["oncall-pager", "team-sre", "slack-alerts"]),
        "groupLabels": {"alertname": alert},
        "commonLabels": {"alertname": alert, "severity": severity, "service": service},
        "alerts": [
            {
                "status": "firing",
                "labels": {
                    "alertname": alert,
                    "namespace": rng.choice(["prod", "production", "payments", "core"]),
                    "pod": f"{service}-{rng.randrange(16**6):06x}-{rng.randrange(36**5):05d}",
                    "severity": severity,
                },
                "annotations": {
                    "summary": f"{alert} on {service}",
                    "runbook_url": f"https://runbooks.example.com/{alert.lower()}",
                },
                "startsAt": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}:"
                f"{rng.randint(10, 59)}:00Z",
            }
        ],
    }
    return json.dumps(body, indent=rng.choice([None, 2]), ensure_ascii=False)


def pagerduty(rng: random.Random, service: str, title: str) -> str:
    """A PagerDuty v3 webhook event for a triggered incident."""
    body = {
        "event": {
            "event_type": "incident.triggered",
            "resource_type": "incident",
            "occurred_at": f"2026-0{rng.randint(1, 9)}-0{rng.randint(1, 9)}T1{rng.randint(0, 9)}:02:11Z",
            "data": {
                "id": f"Q{rng.randrange(36**6):06d}",
                "type": "incident",
                "title": title,
                "service": {"summary": service, "type": "service_reference"},
                "urgency": rng.choice(["high", "low"]),
                "status": "triggered",
            },
        }
    }
    return json.dumps(body, indent=rng.choice([None, 2]), ensure_ascii=False)


def grafana(rng: random.Random, service: str, metric: str, value: str) -> str:
    """A Grafana unified-alerting webhook body."""
    body = {
        "receiver": "grafana-default",
        "status": "firing",
        "orgId": 1,
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": f"{service} {metric}", "grafana_folder": "Production"},
                "annotations": {"description": f"{metric} is {value}"},
                "valueString": f"[ var='B' labels={{service={service}}} value={value} ]",
                "dashboardURL": "https://grafana.example.com/d/abc123",
            }
        ],
        "title": f"[FIRING:1] {service} {metric}",
    }
    return json.dumps(body, indent=rng.choice([None, 2]), ensure_ascii=False)


_LOG_ERRORS = (
    "connection refused",
    "context deadline exceeded",
    "too many connections",
    "upstream connect error or disconnect/reset before headers",
    "OOM command not allowed when used memory > 'maxmemory'",
    'could not obtain lock on row in relation "orders"',
    "read: connection reset by peer",
    "TLS handshake timeout",
)


def log_excerpt(rng: random.Random, service: str, lines: int) -> str:
    """``lines`` lines of a service log with an error repeating in it."""
    error = rng.choice(_LOG_ERRORS)
    out = []
    for i in range(lines):
        stamp = f"2026-03-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}:{10 + i % 50:02d}:{rng.randint(10, 59)}Z"
        level = rng.choice(["ERROR", "ERROR", "WARN", "INFO"])
        msg = error if level != "INFO" else rng.choice(["request served", "retrying", "healthy"])
        out.append(f"{stamp} {level} {service} {msg} req_id={rng.randrange(16**8):08x}")
    return "\n".join(out)


def python_traceback(rng: random.Random, service: str) -> str:
    """A Python traceback from ``service``."""
    error = rng.choice(
        [
            "KeyError: 'customer_id'",
            "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection timeout expired",
            "redis.exceptions.ConnectionError: Error 111 connecting to redis:6379. Connection refused.",
            "TypeError: 'NoneType' object is not subscriptable",
        ]
    )
    module = service.replace("-", "_")
    return (
        "Traceback (most recent call last):\n"
        f'  File "/app/{module}/handlers.py", line {rng.randint(20, 300)}, in handle\n'
        "    result = process(payload)\n"
        f'  File "/app/{module}/core.py", line {rng.randint(20, 300)}, in process\n'
        "    return repo.load(payload['id'])\n"
        f"{error}"
    )


def java_stacktrace(rng: random.Random, service: str) -> str:
    """A Java stack trace from ``service``."""
    pkg = service.split("-")[0]
    error = rng.choice(
        [
            "java.lang.OutOfMemoryError: Java heap space",
            "java.net.SocketTimeoutException: Read timed out",
            'java.lang.NullPointerException: Cannot invoke "Order.getId()" because "order" is null',
            "org.postgresql.util.PSQLException: FATAL: sorry, too many clients already",
        ]
    )
    return (
        f'Exception in thread "http-nio-8080-exec-{rng.randint(1, 40)}" {error}\n'
        f"\tat com.example.{pkg}.service.OrderService.place(OrderService.java:{rng.randint(50, 400)})\n"
        f"\tat com.example.{pkg}.web.OrderController.create(OrderController.java:{rng.randint(20, 90)})\n"
        "\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:897)"
    )


def go_panic(rng: random.Random, service: str) -> str:
    """A Go panic from ``service``."""
    return (
        "panic: runtime error: invalid memory address or nil pointer dereference\n"
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x6d2f1a]\n\n"
        f"goroutine {rng.randint(10, 900)} [running]:\n"
        f"main.(*{service.split('-')[0].title()}Handler).ServeHTTP(0x0, ...)\n"
        f"\t/src/{service}/handler.go:{rng.randint(20, 200)} +0x3a"
    )


def kubectl_describe(rng: random.Random, service: str) -> str:
    """``kubectl describe pod`` events for a failing pod."""
    reason = rng.choice(
        [
            ("BackOff", "Back-off restarting failed container"),
            ("Failed", "Failed to pull image: manifest unknown"),
            ("FailedScheduling", "0/6 nodes are available: 6 Insufficient memory."),
            ("Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 503"),
        ]
    )
    return (
        f"Name:         {service}-{rng.randrange(16**6):06x}\n"
        "Namespace:    prod\n"
        "Status:       Running\n"
        "Events:\n"
        "  Type     Reason     Age   From     Message\n"
        f"  Warning  {reason[0]}  {rng.randint(1, 50)}m   kubelet  {reason[1]}"
    )


def python_code(rng: random.Random, name: str) -> str:
    """A short Python function with a reviewable flaw."""
    return rng.choice(
        [
            f"def get_{name}(conn, key):\n    cur = conn.cursor()\n"
            f"    cur.execute(\"SELECT * FROM {name} WHERE id = '%s'\" % key)\n    return cur.fetchone()",
            f"def load_{name}(path):\n    f = open(path)\n    data = json.load(f)\n    return data",
            f"async def fetch_{name}(client, ids):\n    out = []\n    for i in ids:\n"
            "        out.append(await client.get(f'/items/{i}'))\n    return out",
            f"_cache = {{}}\n\ndef {name}_price(sku):\n    if sku not in _cache:\n"
            "        _cache[sku] = requests.get(URL + sku).json()\n    return _cache[sku]",
        ]
    )


def go_code(rng: random.Random, name: str) -> str:
    """A short Go function with a reviewable flaw."""
    return rng.choice(
        [
            f"func (s *{name.title()}Store) Add(k string, v int) {{\n    s.m[k] += v\n}}",
            f"func fetch{name.title()}(ctx context.Context, url string) ([]byte, error) {{\n"
            "    resp, err := http.Get(url)\n    if err != nil {\n        return nil, err\n    }\n"
            "    return io.ReadAll(resp.Body)\n}",
            f"for _, item := range {name}Items {{\n    go func() {{\n        process(item)\n    }}()\n}}",
        ]
    )


def yaml_manifest(rng: random.Random, service: str) -> str:
    """A Deployment manifest fragment."""
    return (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
        f"  name: {service}\nspec:\n  replicas: {rng.choice([1, 2, 3])}\n  template:\n    spec:\n"
        "      containers:\n"
        f"        - name: {service}\n          image: registry.example.com/{service}:latest\n"
        "          resources:\n            limits:\n"
        f"              memory: {rng.choice(['128Mi', '4Gi', '512Mi'])}"
    )


def dockerfile(rng: random.Random) -> str:
    """A small Dockerfile with habits worth a review."""
    return (
        f"FROM {rng.choice(['python:3.12', 'node:20', 'ubuntu:latest'])}\n"
        "COPY . /app\nRUN pip install -r /app/requirements.txt\n"
        f'ENV API_KEY={rng.choice(["changeme", "sk-test-123"])}\nCMD ["python", "/app/main.py"]'
    )


def diff(rng: random.Random, path: str, lines: int = 6) -> str:
    """A unified diff of ``path`` touching about ``lines`` lines."""
    body = []
    for i in range(lines):
        sign = rng.choice(["+", "-", "+", " "])
        body.append(
            f"{sign}    {rng.choice(['timeout', 'retries', 'pool_size', 'batch'])}_{i} = "
            f"{rng.randint(1, 500)}"
        )
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ -{rng.randint(5, 80)},{lines} +{rng.randint(5, 80)},{lines} @@\n"
        + "\n".join(body)
    )
