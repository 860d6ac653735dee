"""k8s/monitoring's Prometheus rules: valid, unit-tested with promtool, documented, one sender each,
and ADR-006's alerts under ADR-006's names, each condition paging under exactly one name.

``promtool`` comes with Debian's ``prometheus`` package (``.ci/run`` installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from aipool.budget import rules as pool_rules
from aipool.budget.alert_names import ADR_ALERTS, alert_name
from aipool.budget.usage import CALENDAR_QUOTAS
from aipool.settings import ADR_LIMITS
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
    *ADR_ALERTS.values(),
    "AipoolBreakerOpen",
    "AipoolQuotaWarning",
    "AipoolQuotaCritical",
    "AipoolMonthlyBudgetExceeded",
    "AipoolServiceBudgetWarning",
    "AipoolServiceBudgetExceeded",
    "AipoolServiceShareWarning",
    "AipoolServiceShareCritical",
}
#: ADR-006 §3's alerts and the summary each one carries there (k8s/monitoring/prometheus/
#: ai-usage-alerts.yaml in the ADR). MonthlyAIBudgetWarning's "$5" is half of the budget in force,
#: which the promtool tests check with ADR-006's $10.
ADR_SUMMARIES = {
    "GeminiDailyUsageWarning": "Gemini API 每日用量已達 70%",
    "GeminiDailyUsageCritical": "Gemini API 每日用量已達 90%，即將觸發限流",
    "ClaudeDailyUsageWarning": "Claude API 每日用量已達 70%",
    "OllamaConsecutiveFailures": "Ollama 服務可能已離線",
    "MonthlyAIBudgetWarning": "AI 月度成本已達 $5 (預算 50%)",
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
    (half, warn), (whole, exceed) = sorted(pool_rules.MONTHLY_BUDGET_THRESHOLDS)
    assert f">= {Decimal(half)} < {Decimal(whole)})" in alerts["MonthlyAIBudgetWarning"]["expr"]
    assert f">= {Decimal(whole)})" in alerts["AipoolMonthlyBudgetExceeded"]["expr"]
    assert alerts["MonthlyAIBudgetWarning"]["labels"]["severity"] == warn
    assert alerts["AipoolMonthlyBudgetExceeded"]["labels"]["severity"] == exceed
    # a service's budget alerts at the same lines
    assert (
        f">= {Decimal(half)} < {Decimal(whole)}\n" in alerts["AipoolServiceBudgetWarning"]["expr"]
    )
    assert f">= {Decimal(whole)}\n" in alerts["AipoolServiceBudgetExceeded"]["expr"]
    assert alerts["AipoolServiceBudgetWarning"]["labels"]["severity"] == warn
    assert alerts["AipoolServiceBudgetExceeded"]["labels"]["severity"] == exceed
    # a service's share alerts at the quotas' lines
    assert f">= {warning / 100} < {critical / 100})" in alerts["AipoolServiceShareWarning"]["expr"]
    assert f">= {critical / 100})" in alerts["AipoolServiceShareCritical"]["expr"]
    for name in ("GeminiDailyUsageWarning", "ClaudeDailyUsageWarning"):
        assert f">= {warning / 100} < {critical / 100})" in alerts[name]["expr"]
    assert f">= {critical / 100})" in alerts["GeminiDailyUsageCritical"]["expr"]
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


def test_given_adr_006_when_its_alerts_are_looked_up_then_each_has_its_name_and_summary() -> None:
    # Given the rule file ADR-006 names
    assert (
        RULES_FILE.relative_to(ROOT).as_posix() == "k8s/monitoring/prometheus/ai-usage-alerts.yaml"
    )
    alerts = _alerts()
    # Then each alert of the ADR is there under its name, with the ADR's summary (the budget's
    # half is a template: promtool checks it reads "$5" with the ADR's budget)
    assert set(ADR_SUMMARIES) == set(ADR_ALERTS.values())
    for name, summary in ADR_SUMMARIES.items():
        if "$" not in summary:
            assert alerts[name]["annotations"]["summary"] == summary, name
    # and the promtool tests hold each one's summary as the ADR writes it
    tested: dict[str, set[str]] = {}
    for path in TESTS:
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for case in test.get("alert_rule_test", []):
                for alert in case.get("exp_alerts") or []:
                    summary = alert.get("exp_annotations", {}).get("summary")
                    tested.setdefault(case["alertname"], set()).add(summary)
    for name, summary in ADR_SUMMARIES.items():
        assert summary in tested.get(name, set()), name


#: Every condition the pool's budget and breaker checks can raise with ADR-006's limits, as
#: (rule, provider, threshold, the quota's used fraction or None).
def _conditions() -> list[tuple[str, str, str, float | None]]:
    found: list[tuple[str, str, str, float | None]] = []
    for provider, limits in ADR_LIMITS.items():
        for quota in CALENDAR_QUOTAS:
            if getattr(limits.quota, quota):
                found.append((quota, provider, "70%", 0.75))
                found.append((quota, provider, "90%", 0.95))
        found.append(("breaker_open", provider, "open", None))
    found.append(("monthly_cost", "*", "50%", 0.6))
    found.append(("monthly_cost", "*", "100%", 1.03))
    found.append(("service_budget", "*", "50%", 0.6))
    found.append(("service_budget", "*", "100%", 1.03))
    for rule in pool_rules.SERVICE_SHARE_RULES.values():
        found.append((rule, "gemini", "70%", 0.75))
        found.append((rule, "gemini", "90%", 0.95))
    return found


def _condition_case(rule: str, provider: str, fraction: float | None) -> dict[str, Any]:
    """Synthetic series for one condition held for 10 minutes, nothing else wrong."""
    m = 'job="aipool-workers", instance="m"'
    series = [{"series": f'aipool_alert_sender_info{{sender="prometheus", {m}}}', "values": "1x10"}]
    if rule in CALENDAR_QUOTAS:
        assert fraction is not None
        labels = f'provider="{provider}", quota="{rule}", {m}'
        series += [
            {"series": f"aipool_budget_used{{{labels}}}", "values": f"{int(fraction * 1000)}x10"},
            {"series": f"aipool_budget_limit{{{labels}}}", "values": "1000x10"},
        ]
    elif rule == "breaker_open":
        labels = f'provider="{provider}", state="closed", {m}'
        series.append({"series": f"aipool_breaker_state{{{labels}}}", "values": "0x10"})
    elif rule in pool_rules.SERVICE_SHARE_RULES.values():
        assert fraction is not None
        limit = rule.removeprefix("service_")
        labels = f'service="batch", provider="{provider}", limit="{limit}", {m}'
        series += [
            {
                "series": f"aipool_service_share_used{{{labels}}}",
                "values": f"{int(fraction * 1000)}x10",
            },
            {"series": f"aipool_service_share_limit{{{labels}}}", "values": "1000x10"},
        ]
    elif rule == "service_budget":
        series += [
            {
                "series": f'aipool_service_cost_usd{{service="batch", period="month", {m}}}',
                "values": f"{(fraction or 0.6) * 4:g}x10",
            },
            {"series": f'aipool_service_budget_usd{{service="batch", {m}}}', "values": "4x10"},
        ]
    else:
        series += [
            {
                "series": f'aipool_budget_cost_usd{{provider="gemini", period="month", {m}}}',
                "values": f"{(fraction or 0.6) * 10:g}x10",
            },
            {"series": f"aipool_budget_monthly_usd{{{m}}}", "values": "10x10"},
        ]
    return {"interval": "1m", "input_series": series}


#: A failed promtool case: which case, which alert, and the labels of what fired.
_FAILED_CASE = re.compile(
    r"name: (?P<case>[^\n]+),\s+alertname: (?P<alert>\w+), time: \S+,\s+exp:\[\],"
    r"\s+got:\[(?P<got>.*?)\n\s+\]",
    re.DOTALL,
)


def test_given_each_budget_and_breaker_condition_when_it_holds_then_exactly_its_alert_fires(
    tmp_path: Path,
) -> None:
    # Given every condition the pool can raise with ADR-006's limits, each alone for 10 minutes,
    # and a promtool test expecting every budget and breaker alert silent
    conditions = _conditions()
    tests = []
    for rule, provider, threshold, fraction in conditions:
        case = _condition_case(rule, provider, fraction)
        case["name"] = f"{rule}/{provider}/{threshold}"
        case["alert_rule_test"] = [
            {"eval_time": "10m", "alertname": name, "exp_alerts": []} for name in sorted(GATED)
        ]
        tests.append(case)
    path = tmp_path / "conditions.test.yml"
    path.write_text(
        yaml.safe_dump(
            {
                "rule_files": [str(RULES_FILE)],
                "evaluation_interval": "1m",
                "group_eval_order": [g["name"] for g in _groups()],
                "tests": tests,
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    # When promtool evaluates them
    result = _promtool("test", "rules", str(path))
    fired: dict[str, list[str]] = {}
    for failure in _FAILED_CASE.finditer(result.stdout + result.stderr):
        assert f'alertname="{failure["alert"]}"' in failure["got"]
        fired.setdefault(failure["case"], []).append(failure["alert"])
    # Then each condition fired exactly one alert: the name the pool gives it too (so an
    # Alertmanager route or silence holds whichever side sends it), and ADR-006's where it names one
    expected = {f"{r}/{p}/{t}": [alert_name(r, p, t)] for r, p, t, _ in conditions}
    assert fired == expected
    assert set(ADR_ALERTS.values()) <= {n for (n,) in expected.values()}


def _groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))["groups"]
    return groups
