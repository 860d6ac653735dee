"""ADR-006's alert rules as pure functions: usage in, conditions out (no I/O here).

- Calendar quotas (``daily_tokens``, ``daily_requests``, ``monthly_tokens``): a provider's use of
  the local day or month at 70% (warning) and 90% (critical) of each limit it has
  (the settings' quota limits); a provider without that limit has no such alert.
- ``monthly_cost``: the month's cost at 50% (warning) and 100% (critical) of the monthly budget.
- ``service_budget``: a service's month of paid calls at the same thresholds of the monthly budget
  the route table gives it (issue #24); one alert per service, sent to its owner too.
- ``service_daily_tokens``, ``service_daily_requests``: a service's use of its share of a
  provider's daily limit at 70% and 90% (the quotas' thresholds), per service and provider, sent
  to its owner too: past its share its requests go on to the next provider.
- ``model_missing``: a provider answered that the model the route table names is not there
  (critical; 404 "model not found"), reported by the worker that met it: once per provider and
  local day, naming the model. Every request of that route fails the same way until an operator
  pulls the model or fixes the table; the failures count against the provider's breaker too.
- ``not_found``: a provider's base URL does not serve its API (critical; a 404 naming no model, or
  a 405), reported by the worker that met it: once per provider and local day, naming the URL's
  host. Every request to that provider fails the same way until an operator corrects the URL; the
  failures count against its breaker too, but at low traffic may be too few to open it.
- ``breaker_open``: a provider's breaker opened (critical), reported by the breaker's listener. For
  Ollama, the first hop of the general chain, this is ADR-006's "Ollama may be offline": its
  breaker opens on consecutive failures that count against it, never on skipped hops.

Calendar rules are keyed by their local day or month, so a new period starts fresh; an alert of
a calendar rule ends, with one "resolved" message, when its period ends (:func:`period_end`) or
when it stops holding before that. The episode rule (breaker) has no calendar: an episode is one
outage of the breaker, from its opening to its closing, with one "firing" and one "resolved"
message, and its ``period`` names the outage by when it began (``checks.breaker_episode``). The Prometheus rules in ``k8s/monitoring`` use the
same thresholds (``tests/deploy`` checks that they agree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, tzinfo
from decimal import Decimal

from aipool.budget.usage import CALENDAR_QUOTAS, BudgetUsage
from aipool.periods import day_range, month_range
from aipool.routing.table import Service
from aipool.settings.provider_limits import QuotaLimits
from aipool.views.service_report import ShareUse

QUOTA_THRESHOLDS = ((70, "warning"), (90, "critical"))
#: Fractions of the monthly budget that alert, and their severities (ADR-006's 50%; 100% is #19's).
MONTHLY_BUDGET_THRESHOLDS = ((Decimal("0.5"), "warning"), (Decimal("1"), "critical"))
#: ADR-006's warning line (the Prometheus rule's threshold too).
MONTHLY_BUDGET_FRACTION = MONTHLY_BUDGET_THRESHOLDS[0][0]
#: Rules keyed by a local calendar day, and by a local calendar month.
#: A service's share of a provider's daily limit, by the limit's name.
SERVICE_SHARE_RULES = {
    "daily_tokens": "service_daily_tokens",
    "daily_requests": "service_daily_requests",
}
DAILY_RULES = (
    "daily_tokens",
    "daily_requests",
    *SERVICE_SHARE_RULES.values(),
    "model_missing",
    "not_found",
)
MONTHLY_RULES = ("monthly_tokens", "monthly_cost", "service_budget")
CALENDAR_RULES = DAILY_RULES + MONTHLY_RULES


@dataclass(frozen=True)
class Condition:
    """One alert's state right now.

    ``period`` is the calendar period for calendar rules and ``None`` for episode rules.
    ``facts`` fill the message templates. ``service``: the service the alert is about, ``*``
    for alerts about no one service.
    """

    rule: str
    provider: str
    threshold: str
    severity: str
    holds: bool
    period: str | None
    facts: dict[str, object] = field(default_factory=dict)
    service: str = "*"


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


def monthly_cost_conditions(
    cost: Decimal, budget: Decimal, month: str, *, service: Service | None = None
) -> list[Condition]:
    """The month's cost against each of :data:`MONTHLY_BUDGET_THRESHOLDS`, highest first: the
    pool's, or ``service``'s (its cost against its own budget, rule ``service_budget``)."""
    result = []
    for fraction, severity in sorted(MONTHLY_BUDGET_THRESHOLDS, reverse=True):
        percent = int(fraction * 100)
        result.append(
            Condition(
                rule="monthly_cost" if service is None else "service_budget",
                provider="*",
                service="*" if service is None else service.key,
                threshold=f"{percent}%",
                severity=severity,
                # The exact fraction, as the Prometheus rule compares it; never a rounded line.
                holds=budget > 0 and cost >= budget * fraction,
                period=month,
                facts={
                    "cost": cost,
                    "budget": budget,
                    "line": budget * fraction,  # shown as money by the message, never as 0
                    "percent": percent,
                    # Where the month really is (103%), besides the line it crossed.
                    "reached": int(cost * 100 / budget) if budget > 0 else None,
                    **({"name": service.name} if service is not None else {}),
                },
            )
        )
    return result


def service_budget_conditions(
    costs: Mapping[str, Decimal], services: Mapping[str, Service], month: str
) -> list[Condition]:
    """Each service with a monthly budget: its month's cost (``costs``, by service) against
    each threshold, highest first."""
    result = []
    for key, service in services.items():
        if service.monthly_budget_usd is not None:
            cost = costs.get(key, Decimal(0))
            result += monthly_cost_conditions(
                cost, service.monthly_budget_usd, month, service=service
            )
    return result


def service_share_conditions(
    uses: Mapping[str, Sequence[ShareUse]], names: Mapping[str, str], day: str
) -> list[Condition]:
    """Each service's use of each of its shares (``uses``, by service) against
    :data:`QUOTA_THRESHOLDS`; per (service, provider, limit) the highest threshold first.
    ``names``: each service's display name."""
    result = []
    for service, shares in uses.items():
        for share in shares:
            for percent, severity in sorted(QUOTA_THRESHOLDS, reverse=True):
                result.append(
                    Condition(
                        rule=SERVICE_SHARE_RULES[share.limit],
                        provider=share.provider,
                        service=service,
                        threshold=f"{percent}%",
                        severity=severity,
                        holds=share.allowed > 0 and share.used * 100 >= share.allowed * percent,
                        period=day,
                        facts={
                            "used": share.used,
                            "limit": share.allowed,
                            "percent": percent,
                            "name": names.get(service, service),
                        },
                    )
                )
    return result


def monthly_cost_condition(cost: Decimal, budget: Decimal, month: str) -> Condition:
    """The month's cost against ADR-006's warning line (:data:`MONTHLY_BUDGET_FRACTION`)."""
    return monthly_cost_conditions(cost, budget, month)[-1]


def period_end(rule: str, period: str, zone: tzinfo) -> datetime | None:
    """When the calendar ``period`` of an alert of ``rule`` ends (UTC); ``None`` for episode
    rules, which have no calendar."""
    if rule in DAILY_RULES:
        return day_range(date.fromisoformat(period), zone)[1]
    if rule in MONTHLY_RULES:
        return month_range(date.fromisoformat(f"{period}-01"), zone)[1]
    return None


def _seen_today(rule: str, threshold: str, provider: str, day: str, **facts: object) -> Condition:
    """A critical condition a worker saw on the local ``day`` (the pool's misconfiguration)."""
    return Condition(rule, provider, threshold, "critical", True, day, dict(facts))


def model_missing_condition(provider: str, model: str, day: str) -> Condition:
    """``provider`` does not have ``model`` (the route table's), seen on the local ``day``."""
    return _seen_today("model_missing", "missing", provider, day, model=model)


def not_found_condition(provider: str, host: str, day: str) -> Condition:
    """``provider``'s base URL, on ``host``, does not serve its API, seen on the local ``day``."""
    return _seen_today("not_found", "not_found", provider, day, host=host)


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
