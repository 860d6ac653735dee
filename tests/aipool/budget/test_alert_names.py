"""One name per budget and breaker condition: ADR-006's where the ADR names one."""

from __future__ import annotations

import pytest

from aipool.budget.alert_names import alert_name


@pytest.mark.parametrize(
    ("rule", "provider", "threshold", "name"),
    [
        ("daily_tokens", "gemini", "70%", "GeminiDailyUsageWarning"),
        ("daily_tokens", "gemini", "90%", "GeminiDailyUsageCritical"),
        ("daily_tokens", "claude", "70%", "ClaudeDailyUsageWarning"),
        # ADR-006 names no Claude critical: the generic one covers it
        ("daily_tokens", "claude", "90%", "AipoolQuotaCritical"),
        ("daily_requests", "gemini", "70%", "AipoolQuotaWarning"),
        ("monthly_tokens", "claude", "90%", "AipoolQuotaCritical"),
        ("breaker_open", "ollama", "open", "OllamaConsecutiveFailures"),
        ("breaker_open", "nemotron", "open", "AipoolBreakerOpen"),
        ("monthly_cost", "*", "50%", "MonthlyAIBudgetWarning"),
        ("monthly_cost", "*", "100%", "AipoolMonthlyBudgetExceeded"),
        ("model_missing", "gemini", "missing", "AipoolModelMissing"),
        ("not_found", "ollama", "not_found", "AipoolProviderNotFound"),
        # a condition with no name of its own keeps its rule's
        ("monthly_cost", "*", "75%", "monthly_cost"),
    ],
)
def test_given_a_condition_when_named_then_it_has_the_name_prometheus_fires(
    rule: str, provider: str, threshold: str, name: str
) -> None:
    assert alert_name(rule, provider, threshold) == name
