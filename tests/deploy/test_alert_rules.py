"""k8s/monitoring's Prometheus rules: valid, unit-tested with promtool, documented, one sender each.

``promtool`` comes with Debian's ``prometheus`` package (``.ci/run`` installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from decimal import Decimal
from typing import Any

import pytest
import yaml

from aipool.budget import rules as pool_rules
from tests.deploy.prometheus_rule import (
    MONITORING,
    PROMETHEUS_RULE_FILE,
    ROOT,
    RULES_FILE,
    render,
)

TESTS = sorted((MONITORING / "tests").glob("*.yml"))
OPERATIONS = ROOT / "docs" / "operations.md"
#: Budget and breaker alerts: sent by Prometheus only when the pool does not send them itself.
GATED = {
    "OllamaDown",
    "AipoolBreakerOpen",
    "AipoolQuotaWarning",
    "AipoolQuotaCritical",
    "AipoolMonthlyBudgetWarning",
}
GATE = 'and on () (aipool_alert_sender_info{sender="prometheus"} == 1)'


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: apt-get install -y prometheus"
    return subprocess.run(
        [promtool, *args], capture_output=True, text=True, check=False, cwd=MONITORING / "tests"
    )


def _alerts() -> dict[str, dict[str, Any]]:
    groups = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))["groups"]
    return {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}


def _anchor(heading: str) -> str:
    # GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_given_the_rules_when_checked_by_promtool_then_they_are_valid() -> None:
    result = _promtool("check", "rules", str(RULES_FILE))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_given_the_rule_unit_tests_when_run_by_promtool_then_every_case_passes() -> None:
    assert TESTS
    result = _promtool("test", "rules", *(str(t) for t in TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_given_the_rule_unit_tests_when_read_then_each_alert_is_seen_firing_and_silent() -> None:
    firing: set[str] = set()
    silent: set[str] = set()
    for path in TESTS:
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case.get("exp_alerts") else silent).add(case["alertname"])
    assert firing == silent == set(_alerts())


def test_given_the_prometheus_rule_when_compared_then_it_carries_the_rules_file() -> None:
    assert PROMETHEUS_RULE_FILE.read_text(encoding="utf-8") == render(), (
        "k8s/monitoring/ai-usage-alerts.yaml is stale: python -m tests.deploy.prometheus_rule"
    )


@pytest.mark.parametrize("name", sorted(_alerts()))
def test_given_an_alert_when_read_then_it_waits_has_a_severity_and_a_runbook_section(
    name: str,
) -> None:
    rule = _alerts()[name]
    assert re.fullmatch(r"\d+m", rule["for"]), rule.get("for")
    assert rule["labels"]["severity"] in ("warning", "critical")
    assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    page, anchor = rule["annotations"]["runbook_url"].split("#")
    assert page == "docs/operations.md"
    headings = [
        _anchor(line.lstrip("#"))
        for line in OPERATIONS.read_text().splitlines()
        if line.startswith("#")
    ]
    assert anchor == _anchor(name) and anchor in headings, f"no section {name} in {page}"


@pytest.mark.parametrize("name", sorted(_alerts()))
def test_given_an_alert_when_read_then_budget_and_breaker_alerts_alone_wait_for_the_sender(
    name: str,
) -> None:
    expr = " ".join(_alerts()[name]["expr"].split())
    assert (GATE in expr) is (name in GATED)


def test_given_the_budget_alerts_when_read_then_their_thresholds_are_the_pools() -> None:
    alerts = _alerts()
    (warning, _), (critical, _) = sorted(pool_rules.QUOTA_THRESHOLDS)
    assert f">= {warning / 100} < {critical / 100}" in alerts["AipoolQuotaWarning"]["expr"]
    assert f">= {critical / 100})" in alerts["AipoolQuotaCritical"]["expr"]
    fraction = Decimal(str(pool_rules.MONTHLY_BUDGET_FRACTION))
    assert f">= {fraction})" in alerts["AipoolMonthlyBudgetWarning"]["expr"]
    # the severities are the pool's own
    assert alerts["AipoolQuotaWarning"]["labels"]["severity"] == "warning"
    assert alerts["AipoolQuotaCritical"]["labels"]["severity"] == "critical"


def test_given_the_pod_monitor_when_read_then_its_targets_are_the_job_the_rules_name() -> None:
    (monitor,) = yaml.safe_load_all((MONITORING / "podmonitor.yaml").read_text(encoding="utf-8"))
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    relabelings = endpoint["relabelings"]
    assert {"targetLabel": "job", "replacement": "aipool-workers"} in relabelings
    # a target label named "queue" would rename the series' own queue label
    assert all(r.get("targetLabel") != "queue" for r in relabelings)
    assert 'up{job="aipool-workers"}' in _alerts()["AipoolWorkerDown"]["expr"]
