"""ADR-006's alert rules as pure functions: usage in, conditions out (no I/O here).

- Calendar quotas (``daily_tokens``, ``daily_requests``, ``monthly_tokens``): a provider's use of
  the local day or month at 70% (warning) and 90% (critical) of each limit it has
  (the settings' quota limits); a provider without that limit has no such alert.
- ``monthly_cost``: the month's cost at 50% of the monthly budget (warning).
- ``breaker_open``: a provider's breaker opened (critical), reported by the breaker's listener. For
  Ollama, the first hop of the general chain, this is ADR-006's "Ollama may be offline": its
  breaker opens on consecutive failures that count against it, never on skipped hops.

Calendar rules are keyed by their local day or month, so a new period starts fresh. The episode
rule (breaker) has no calendar: an episode starts when the condition first holds and ends, with
one "resolved" message, when it stops holding. The Prometheus rules in ``k8s/monitoring`` use the
same thresholds (``tests/deploy`` checks that they agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from aipool.budget.usage import CALENDAR_QUOTAS, BudgetUsage
from aipool.settings.provider_limits import QuotaLimits

QUOTA_THRESHOLDS = ((70, "warning"), (90, "critical"))
MONTHLY_BUDGET_FRACTION = Decimal("0.5")


@dataclass(frozen=True)
class Condition:
    """One alert's state right now.

    ``period`` is the calendar period for calendar rules and ``None`` for episode rules.
    ``facts`` fill the message templates.
    """

    rule: str
    provider: str
    threshold: str
    severity: str
    holds: bool
    period: str | None
    facts: dict[str, object] = field(default_factory=dict)


def quota_conditions(
    usage: BudgetUsage, quotas: dict[str, QuotaLimits], day: str, month: str
) -> list[Condition]:
    """One condition per provider, calendar limit it has and threshold; per (provider, limit)
    the highest threshold first. ``day`` and ``month`` name the current local periods."""
    result = []
    for provider, quota in quotas.items():
        for name in CALENDAR_QUOTAS:
            limit = getattr(quota, name)
            if not limit:
                continue
            used = usage.of(provider).used(name)
            for percent, severity in sorted(QUOTA_THRESHOLDS, reverse=True):
                result.append(
                    Condition(
                        rule=name,
                        provider=provider,
                        threshold=f"{percent}%",
                        severity=severity,
                        holds=used * 100 >= limit * percent,
                        period=month if name.startswith("monthly") else day,
                        facts={"used": used, "limit": limit, "percent": percent},
                    )
                )
    return result


def monthly_cost_condition(cost: Decimal, budget: Decimal, month: str) -> Condition:
    """The month's cost against ``MONTHLY_BUDGET_FRACTION`` of ``budget``."""
    line = budget * MONTHLY_BUDGET_FRACTION  # shown as money by the message, never rounded to 0
    return Condition(
        rule="monthly_cost",
        provider="*",
        threshold=f"{int(MONTHLY_BUDGET_FRACTION * 100)}%",
        severity="warning",
        # The exact fraction, not the rounded line, as the Prometheus rule compares it.
        holds=budget > 0 and cost >= budget * MONTHLY_BUDGET_FRACTION,
        period=month,
        facts={
            "cost": cost,
            "budget": budget,
            "line": line,
            "percent": int(MONTHLY_BUDGET_FRACTION * 100),
        },
    )


def breaker_condition(provider: str, is_open: bool, **facts: object) -> Condition:
    """A provider's breaker is open (``is_open``) or has closed again."""
    return Condition(
        rule="breaker_open",
        provider=provider,
        threshold="open",
        severity="critical",
        holds=is_open,
        period=None,
        facts=dict(facts),
    )
