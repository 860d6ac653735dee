"""ADR-006's alert rules as pure functions: usage in, conditions out (no I/O here).

- ``daily_tokens``: a provider's tokens today at 70% (warning) and 90% (critical) of its daily
  quota (``load_limits()``); providers without a daily quota have no such alert.
- ``monthly_cost``: the month's cost at 50% of the monthly budget (warning).
- ``ollama_failures``: more than 5 failed Ollama calls in 5 minutes (critical; cloud fallback is
  then carrying the traffic).
- ``breaker_open``: a provider's breaker opened (critical), reported by the breaker's listener.

Calendar rules (the first two) are keyed by their local day or month, so a new period starts
fresh. Episode rules (the last two) have no calendar: an episode starts when the condition first
holds and ends, with one "resolved" message, when it stops holding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from aipool.limits import QuotaLimits

DAILY_TOKEN_THRESHOLDS = ((70, "warning"), (90, "critical"))
MONTHLY_BUDGET_FRACTION = Decimal("0.5")
OLLAMA_FAILURE_LIMIT = 5
OLLAMA_WINDOW_MINUTES = 5


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


def daily_token_conditions(
    tokens_today: dict[str, int], quotas: dict[str, QuotaLimits], day: str
) -> list[Condition]:
    """One condition per provider with a daily token quota and per threshold, highest first."""
    result = []
    for provider, quota in quotas.items():
        if not quota.daily_tokens:
            continue
        used = tokens_today.get(provider, 0)
        for percent, severity in sorted(DAILY_TOKEN_THRESHOLDS, reverse=True):
            result.append(
                Condition(
                    rule="daily_tokens",
                    provider=provider,
                    threshold=f"{percent}%",
                    severity=severity,
                    holds=used * 100 >= quota.daily_tokens * percent,
                    period=day,
                    facts={"used": used, "limit": quota.daily_tokens, "percent": percent},
                )
            )
    return result


def monthly_cost_condition(cost: Decimal, budget: Decimal, month: str) -> Condition:
    """The month's cost against ``MONTHLY_BUDGET_FRACTION`` of ``budget``."""
    line = (budget * MONTHLY_BUDGET_FRACTION).quantize(Decimal("0.01"))
    return Condition(
        rule="monthly_cost",
        provider="*",
        threshold=f"{int(MONTHLY_BUDGET_FRACTION * 100)}%",
        severity="warning",
        holds=budget > 0 and cost >= line,
        period=month,
        facts={
            "cost": cost,
            "budget": budget,
            "line": line,
            "percent": int(MONTHLY_BUDGET_FRACTION * 100),
        },
    )


def ollama_failure_condition(failures: int) -> Condition:
    """More than ``OLLAMA_FAILURE_LIMIT`` failures in the last ``OLLAMA_WINDOW_MINUTES``."""
    return Condition(
        rule="ollama_failures",
        provider="ollama",
        threshold=f">{OLLAMA_FAILURE_LIMIT}/{OLLAMA_WINDOW_MINUTES}m",
        severity="critical",
        holds=failures > OLLAMA_FAILURE_LIMIT,
        period=None,
        facts={
            "failures": failures,
            "limit": OLLAMA_FAILURE_LIMIT,
            "minutes": OLLAMA_WINDOW_MINUTES,
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
