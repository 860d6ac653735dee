"""ADR-006's names on the wire: the rule file, the five alerts and the two metrics the ADR names
exist under those names, and the dashboard and ``docs/operations.md`` say what implements each.

The alerts' behaviour (firing and silent, one page per condition) is promtool's, in
``test_alert_rules``; here, that every name a team built on is where the ADR put it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from prometheus_client import Counter

from aipool.budget.alert_names import ADR_ALERTS
from aipool.metrics import hops
from tests.deploy.prometheus_rule import MONITORING, ROOT, RULES_FILE

#: ADR-006 §3, verbatim.
ADR_RULE_FILE = "k8s/monitoring/prometheus/ai-usage-alerts.yaml"
ADR_ALERT_NAMES = (
    "GeminiDailyUsageWarning",
    "GeminiDailyUsageCritical",
    "ClaudeDailyUsageWarning",
    "OllamaConsecutiveFailures",
    "MonthlyAIBudgetWarning",
)
ADR_METRICS = ("ai_tokens_total", "ai_requests_failed_total")
DASHBOARD = MONITORING / "grafana" / "aipool.json"
OPERATIONS = ROOT / "docs" / "operations.md"


def _rule_names() -> set[str]:
    groups = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))["groups"]
    return {r["alert"] for g in groups for r in g["rules"] if "alert" in r}


def _exported(counter: Counter) -> str:
    """The name a counter's samples are scraped under (the text format adds ``_total``)."""
    (family,) = counter.describe()
    assert family.type == "counter"
    return f"{family.name}_total"


def test_given_adr_006_when_its_rule_file_is_looked_for_then_it_is_the_pools_rule_file() -> None:
    assert (ROOT / ADR_RULE_FILE).is_file()
    assert RULES_FILE == ROOT / ADR_RULE_FILE
    # Prometheus in compose and the Kubernetes PrometheusRule both carry it
    compose = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    assert f"./{ADR_RULE_FILE}:" in compose
    groups = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))["groups"]
    assert "ai-usage-alerts" in [g["name"] for g in groups]


def test_given_adr_006_when_its_alerts_are_looked_for_then_each_is_a_rule_and_a_pool_alert() -> (
    None
):
    assert set(ADR_ALERT_NAMES) == set(ADR_ALERTS.values())
    assert set(ADR_ALERT_NAMES) <= _rule_names()


def test_given_adr_006_when_its_metrics_are_scraped_then_they_are_the_pools_counters() -> None:
    # Given the pool's token and failure counters
    tokens, failures = _exported(hops.TOKENS), _exported(hops.FAILURES)
    # Then they are exported under ADR-006's names, labelled by provider
    assert tokens == "ai_tokens_total" and "provider" in hops.TOKENS._labelnames
    assert failures == "ai_requests_failed_total" and "provider" in hops.FAILURES._labelnames
    # and no other counter of the pool exports the same thing under an aipool_* name
    assert not [
        name
        for name in dir(hops)
        if isinstance(getattr(hops, name), Counter)
        and getattr(hops, name)._name in ("aipool_tokens", "aipool_provider_failures")
    ]


def _dashboard_text() -> str:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    (panel,) = [p for p in dashboard["panels"] if p["type"] == "text"]
    return str(panel["options"]["content"])


def _table_rows(text: str) -> dict[str, str]:
    """First cell (a name in backticks) -> the rest of the row, for each markdown table row."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`([^`]+)`", cells[0]) if len(cells) > 1 else []
        for name in names:
            rows[name.split("{")[0]] = " | ".join(cells[1:])
    return rows


def test_given_the_dashboard_when_read_then_it_maps_every_adr_name_to_what_implements_it() -> None:
    rows = _table_rows(_dashboard_text())
    for name in (ADR_RULE_FILE, *ADR_ALERT_NAMES, *ADR_METRICS):
        assert rows.get(name), f"the dashboard does not map {name}"
    # and each panel it points at is a panel of the dashboard
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    titles = {p["title"] for p in dashboard["panels"]}
    for name in (*ADR_ALERT_NAMES, *ADR_METRICS):
        panels = rows[name].rsplit(" | ", 1)[-1]
        for title in (t.strip() for t in panels.split(";")):
            assert title in titles, f"{name}: no panel {title!r}"


def test_given_the_operations_guide_when_read_then_it_maps_every_adr_name() -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    section = text.split("### ADR-006's names and what implements them", 1)[1].split("\n### ", 1)[0]
    rows = _table_rows(section)
    for name in (ADR_RULE_FILE, *ADR_ALERT_NAMES, *ADR_METRICS):
        assert rows.get(name), f"docs/operations.md does not map {name}"
    # and each ADR alert has its runbook section
    headings = {line[4:].strip() for line in text.splitlines() if line.startswith("### ")}
    assert set(ADR_ALERT_NAMES) <= headings
