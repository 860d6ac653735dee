"""The Grafana dashboard and the alert rules read what real workers serve.

A real prefork provider worker answers real requests (one falls back from a failing Ollama), the
maintenance worker reads the pool's state, and every panel's query, and every rule, must name
metrics and labels that exist in those two scrapes. The ledger gauges agree with the answers to the
token once the ledger is drained.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.conftest import MonitoredPool
from tests.deploy.prometheus_rule import MONITORING, RULES_FILE
from tests.support.promql import referenced
from tests.support.requests import QUESTION
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

DASHBOARD = MONITORING / "grafana" / "aipool.json"
#: Series a rule reads that the pool does not serve: Prometheus's own and kube-state-metrics'.
FOREIGN = {
    "up",
    "kube_horizontalpodautoscaler_status_current_replicas",
    "kube_horizontalpodautoscaler_spec_max_replicas",
}
#: Series only a setting turns on (AIPOOL_REDIS_REPLICA_ACKS), absent from the default pool's
#: scrape: their rules are checked by promtool's tests, their labels by tests/aipool/attempt.
SET_BY_SETTINGS = {"aipool_replica_ack_shortfalls_total"}


def _panels() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    # rows group panels; the text panel maps ADR-006's names (tests/deploy/test_adr_names.py)
    return [p for p in dashboard["panels"] if p["type"] not in ("row", "text")]


def _samples(text: str) -> dict[str, set[str]]:
    """Sample name -> every label name it carries, in one scrape."""
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, set()).update(sample.labels)
    return found


def _value(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return float(sample.value)
    return None


@pytest.fixture(scope="module")
def scraped(monitored_pool: MonitoredPool) -> dict[str, Any]:
    """Both scrapes after real requests, one of which met a failing Ollama; the ledger drained."""
    pool, sim = monitored_pool, monitored_pool.simulator
    sim.reset()
    try:
        answers = [pool.producer.send({**QUESTION, "prompt": "What is a pod?"}).get(timeout=30)]
        sim.set_fault("ollama", "error_500", times=1)
        answers.append(pool.producer.send({**QUESTION, "prompt": "And a node?"}).get(timeout=30))
    finally:
        sim.reset()
    pool.producer.send_task("aipool.drain_ledger", queue="maintenance")
    maintenance = eventually(
        lambda: (
            (text := pool.scrape(pool.maintenance_port))
            and _value(text, "aipool_ledger_pending_records") == 0
            and _value(text, "aipool_budget_used", provider="gemini", quota="daily_requests") == 1
            and text
        ),
        30,
        "the ledger drained",
        interval=0.2,
    )
    return {
        "answers": answers,
        "providers": pool.scrape(pool.providers_port),
        "maintenance": maintenance,
    }


def test_given_real_requests_when_scraped_then_the_answers_and_the_failure_show(
    scraped: dict[str, Any],
) -> None:
    first, second = scraped["answers"]
    assert first["provider"] == "ollama"
    assert [a["outcome"] for a in second["attempts"]] == ["error", "ok"]
    assert second["provider"] == "gemini"
    text = scraped["providers"]
    assert _value(text, "ai_requests_failed_total", provider="ollama", code="server_error")
    assert _value(text, "aipool_requests_total", provider="gemini", outcome="ok") == 1


@pytest.mark.parametrize("panel", _panels(), ids=lambda p: p["title"])
def test_given_a_dashboard_panel_when_its_queries_are_read_then_the_scrape_has_what_they_name(
    scraped: dict[str, Any], panel: dict[str, Any]
) -> None:
    samples = _samples(scraped["providers"] + scraped["maintenance"])
    assert panel["targets"], panel["title"]
    for target in panel["targets"]:
        metrics, labels = referenced(target["expr"])
        assert metrics, target["expr"]
        for metric in metrics:
            assert metric in samples, f"{panel['title']}: {metric} is not served"
        served = set().union(*(samples[m] for m in metrics))
        assert labels <= served, f"{panel['title']}: {labels - served} not on {metrics}"
        legend = set(json.dumps(target.get("legendFormat", "")).split("{{")[1:])
        assert {part.split("}}")[0] for part in legend} <= served | labels, target["legendFormat"]


def test_given_the_alert_rules_when_read_then_the_scrape_has_every_series_they_name(
    scraped: dict[str, Any],
) -> None:
    samples = _samples(scraped["providers"] + scraped["maintenance"])
    groups = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))["groups"]
    # a recorded series carries the labels of the series it is computed from
    sources = {
        r["record"]: referenced(r["expr"])[0] for g in groups for r in g["rules"] if "record" in r
    }
    for rule in (r for g in groups for r in g["rules"]):
        if "label_replace" in rule["expr"]:
            continue  # AipoolQueueScaledOut reads kube-state-metrics, checked by promtool only
        metrics, labels = referenced(rule["expr"])
        if metrics & SET_BY_SETTINGS:
            continue
        own = set().union(*(sources.get(m, {m}) for m in metrics)) - FOREIGN
        for metric in own:
            assert metric in samples, f"{rule.get('alert') or rule['record']}: {metric}"
        served = set().union(set(), *(samples[m] for m in own))
        assert labels <= served | {"job", "instance"}, rule.get("alert") or rule["record"]


def test_given_answers_when_the_ledger_is_drained_then_the_budget_gauges_agree_to_the_token(
    scraped: dict[str, Any],
) -> None:
    # Given: what the producer was told each provider used
    tokens: dict[str, int] = {}
    for answer in scraped["answers"]:
        usage = answer["usage"]
        tokens[answer["provider"]] = tokens.get(answer["provider"], 0) + (
            usage["input_tokens"] + usage["output_tokens"]
        )
    text = scraped["maintenance"]
    # Then: the ledger's gauges (what the budget alerts compare) say the same
    for provider, used in tokens.items():
        assert _value(text, "aipool_budget_used", provider=provider, quota="daily_tokens") == used
        assert _value(text, "aipool_budget_used", provider=provider, quota="monthly_tokens") == used
    gemini_cost = scraped["answers"][1]["cost_usd"]
    assert _value(text, "aipool_budget_cost_usd", provider="gemini", period="day") == pytest.approx(
        gemini_cost
    )
    # Ollama called twice (one answer, one failure): two requests reached it
    assert _value(text, "aipool_budget_used", provider="ollama", quota="daily_requests") == 2
    assert _value(text, "aipool_budget_limit", provider="gemini", quota="daily_tokens") == 100_000
    assert _value(text, "aipool_alert_sender_info", sender="prometheus") == 1
