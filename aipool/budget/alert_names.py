"""The name each budget and breaker alert goes by, whoever sends it.

ADR-006 §3 names five alerts, and teams build Alertmanager routes, silences and dashboards on those
names. Where the ADR names an alert for a condition, that is its name; every other provider and
quota has a generic name. The pool's own notifications (``AIPOOL_ALERTS=pool``) carry the name as
their ``alertname`` label, and the Prometheus rules in ``k8s/monitoring/prometheus/
ai-usage-alerts.yaml`` (``AIPOOL_ALERTS=prometheus``) fire under the same one, so an alert is
routed the same way whichever side sends it. ``tests/deploy/test_alert_rules.py`` checks that the
rules fire exactly the name given here for each condition, and nothing else.

============================================  ================================  ======================
condition (rule, provider, threshold)         name                              ADR-006
============================================  ================================  ======================
``daily_tokens``, gemini, 70%                 ``GeminiDailyUsageWarning``       yes
``daily_tokens``, gemini, 90%                 ``GeminiDailyUsageCritical``      yes
``daily_tokens``, claude, 70%                 ``ClaudeDailyUsageWarning``       yes
``breaker_open``, ollama                      ``OllamaConsecutiveFailures``     yes
``monthly_cost``, 50%                         ``MonthlyAIBudgetWarning``        yes
any other calendar quota, 70%                 ``AipoolQuotaWarning``
any other calendar quota, 90%                 ``AipoolQuotaCritical``
``breaker_open``, a cloud provider            ``AipoolBreakerOpen``
``model_missing``, any provider               ``AipoolModelMissing``
``not_found``, any provider                   ``AipoolProviderNotFound``
``monthly_cost``, 100%                        ``AipoolMonthlyBudgetExceeded``
``service_budget``, 50% (a service's budget)  ``AipoolServiceBudgetWarning``
``service_budget``, 100%                      ``AipoolServiceBudgetExceeded``
a service's share of a daily limit, 70%       ``AipoolServiceShareWarning``
a service's share of a daily limit, 90%       ``AipoolServiceShareCritical``
============================================  ================================  ======================
"""

from __future__ import annotations

from aipool.budget.rules import SERVICE_SHARE_RULES
from aipool.budget.usage import CALENDAR_QUOTAS

_SHARE_RULES = frozenset(SERVICE_SHARE_RULES.values())

#: ADR-006's alert names, by the condition each one stands for.
ADR_ALERTS: dict[tuple[str, str, str], str] = {
    ("daily_tokens", "gemini", "70%"): "GeminiDailyUsageWarning",
    ("daily_tokens", "gemini", "90%"): "GeminiDailyUsageCritical",
    ("daily_tokens", "claude", "70%"): "ClaudeDailyUsageWarning",
    ("breaker_open", "ollama", "open"): "OllamaConsecutiveFailures",
    ("monthly_cost", "*", "50%"): "MonthlyAIBudgetWarning",
}

#: The names of conditions ADR-006 names no alert for, by (kind of rule, threshold).
_GENERIC: dict[tuple[str, str], str] = {
    ("quota", "70%"): "AipoolQuotaWarning",
    ("quota", "90%"): "AipoolQuotaCritical",
    ("breaker_open", "open"): "AipoolBreakerOpen",
    ("model_missing", "missing"): "AipoolModelMissing",
    ("not_found", "not_found"): "AipoolProviderNotFound",
    ("monthly_cost", "100%"): "AipoolMonthlyBudgetExceeded",
    ("service_budget", "50%"): "AipoolServiceBudgetWarning",
    ("service_budget", "100%"): "AipoolServiceBudgetExceeded",
    ("service_share", "70%"): "AipoolServiceShareWarning",
    ("service_share", "90%"): "AipoolServiceShareCritical",
}


def alert_name(rule: str, provider: str, threshold: str) -> str:
    """The ``alertname`` of the condition ``rule`` / ``provider`` / ``threshold`` (the fields of
    :class:`aipool.budget.rules.Condition`); a condition without a name of its own keeps ``rule``."""
    adr = ADR_ALERTS.get((rule, provider, threshold))
    if adr is not None:
        return adr
    kind = "quota" if rule in CALENDAR_QUOTAS else "service_share" if rule in _SHARE_RULES else rule
    return _GENERIC.get((kind, threshold), rule)
