"""Budget alerts and the daily budget report, from ADR-006's rules.

``run_budget_checks()`` (a beat task every 5 minutes) evaluates the rules against the ledger and
sends each alert once per (rule, provider, threshold, period); ``notify_breaker_opened()`` is the
breaker listener's entry point, ``reconcile_breaker_alerts()`` (with the budget checks) resolves the
breaker alerts whose outage the breakers no longer hold, ``notify_model_missing()`` a worker's that
met a missing model, ``notify_provider_not_found()`` one whose provider's URL does not serve its
API; ``build_report()``/``render_report()`` make the daily report.
"""

from aipool.budget.checks import (
    monthly_budget_usd,
    notify_breaker_closed,
    notify_breaker_opened,
    notify_model_missing,
    notify_provider_not_found,
    reconcile_breaker_alerts,
    run_budget_checks,
)
from aipool.budget.report import build_report, render_report, report_notification

__all__ = [
    "build_report",
    "monthly_budget_usd",
    "notify_breaker_closed",
    "notify_breaker_opened",
    "notify_model_missing",
    "notify_provider_not_found",
    "reconcile_breaker_alerts",
    "render_report",
    "report_notification",
    "run_budget_checks",
]
