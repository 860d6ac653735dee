"""The PrometheusRule of k8s/monitoring, rendered from the plain rules file it must carry.

``python -m tests.deploy.prometheus_rule`` rewrites ``k8s/monitoring/prometheusrule.yaml`` after
an edit of ``k8s/monitoring/prometheus/ai-usage-alerts.yaml`` (the rule file ADR-006 names);
``test_alert_rules`` fails while the two differ.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "k8s" / "monitoring"
RULES_FILE = MONITORING / "prometheus" / "ai-usage-alerts.yaml"
PROMETHEUS_RULE_FILE = MONITORING / "prometheusrule.yaml"

HEADER = """\
# GENERATED from k8s/monitoring/prometheus/ai-usage-alerts.yaml by `python -m tests.deploy.prometheus_rule`:
# edit that file (it has the comments), then regenerate this one. The same groups as a
# PrometheusRule for the Prometheus Operator; what each alert means, who sends it and what to do is
# in docs/operations.md ("Alerts").
"""


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> Any:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def prometheus_rule(groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The PrometheusRule object carrying ``groups``."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "aipool-ai-usage-alerts",
            "namespace": "aipool",
            "labels": {
                "app.kubernetes.io/part-of": "aipool",
                # The label kube-prometheus-stack's ruleSelector matches by default.
                "release": "prometheus",
            },
        },
        "spec": {"groups": groups},
    }


def render() -> str:
    """The PrometheusRule file's text for the current rules file."""
    groups = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))["groups"]
    body = yaml.dump(
        prometheus_rule(groups), Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=1000
    )
    return HEADER + body


if __name__ == "__main__":
    PROMETHEUS_RULE_FILE.write_text(render(), encoding="utf-8")
    print(f"wrote {PROMETHEUS_RULE_FILE.relative_to(ROOT)}")
