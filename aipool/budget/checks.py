"""Evaluating the budget rules against the ledger and notifying, once per alert episode.

For every condition (see :mod:`aipool.budget.events` for the journal's table):

- it holds and has no open episode → journal "firing" (once) and notify;
- it does not hold but has an open episode → journal "resolved" (once) and notify;
- otherwise nothing: staying above a threshold sends nothing more.

Before that, every calendar alert whose period has ended is resolved, with one message saying
so (:func:`expire_periods`): an operator never holds a "firing" day alert for a day that is over.
The webhook's ``endsAt`` of that message is the period's end; of any other resolution, the
moment it was seen.

The journal row is written *before* sending, so a crash mid-send never sends twice; the channels
and their outcome are added afterwards. If every channel failed, the log channel still has it.
When one run crosses several thresholds of the same rule and provider (70% and 90% at once), only
the highest is sent; the lower ones are journaled as superseded, and their end is not sent either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, tzinfo
from decimal import Decimal
from functools import cache
from typing import Any

from redis.exceptions import RedisError
from sqlalchemy import Engine

import aipool.budget.rules as rules
from aipool.breaker.state import BreakerState
from aipool.breaker.storage import BreakerStore
from aipool.budget.alert_names import alert_name
from aipool.budget.events import (
    SUPERSEDED,
    OpenEpisode,
    next_episode,
    open_episode,
    open_episodes,
    record_once,
    set_channels,
)
from aipool.budget.messages import describe, describe_forgotten, describe_period_end
from aipool.budget.owners import owner_notifiers
from aipool.budget.rules import Condition
from aipool.budget.sender import pool_sends_alerts
from aipool.budget.usage import budget_usage
from aipool.ledger.db import make_engine
from aipool.ledger.services import ServiceUsage, service_usage_day
from aipool.ledger.spend import service_month_cost
from aipool.notify import Notification, Notifier, dispatch, notifiers_from_env
from aipool.periods import local_day, pool_zone
from aipool.routing.table import load_table
from aipool.settings import settings
from aipool.views.service_report import share_use

log = logging.getLogger(__name__)


#: Alerts the pool sends whoever sends the budget and breaker ones: no Prometheus rule has them.
POOL_ONLY_RULES = ("model_missing", "not_found")


@cache
def default_engine() -> Engine:
    """One engine per process on ``DATABASE_URL`` (or the SQLite default), built on first use."""
    return make_engine()


def monthly_budget_usd() -> Decimal:
    """``AIPOOL_MONTHLY_BUDGET_USD``, default $10 (ADR-006)."""
    return settings().monthly_budget_usd


@dataclass(frozen=True)
class Sent:
    """An alert transition this run journaled, and what happened on each channel."""

    rule: str
    provider: str
    threshold: str
    state: str
    summary: str
    channels: dict[str, str]
    #: The service the alert is about (a service's budget), ``*`` for none.
    service: str = "*"


def _notification(
    c: Condition,
    state: str,
    summary: str,
    description: str,
    starts_at: datetime,
    ends_at: datetime | None,
) -> Notification:
    return Notification(
        summary=summary,
        description=description,
        severity=c.severity,
        status=state,
        labels={
            # The name Prometheus gives the same alert (ADR-006's where it names one).
            "alertname": alert_name(c.rule, c.provider, c.threshold),
            "rule": c.rule,
            "provider": c.provider,
            "threshold": c.threshold,
            **({"period": c.period} if c.period else {}),
            **({"service": c.service} if c.service != "*" else {}),
        },
        starts_at=starts_at,
        ends_at=ends_at,
    )


def _send(
    engine: Engine,
    c: Condition,
    state: str,
    period: str,
    episode: int,
    text: tuple[str, str],
    notifiers: Sequence[Notifier],
    now: datetime,
    *,
    starts_at: datetime,
    ends_at: datetime | None,
    silent: bool,
) -> Sent | None:
    """Journal the transition and, unless ``silent`` or already journaled, notify."""
    summary, description = text
    if silent:
        record_once(engine, c, state, period, episode, summary, now, SUPERSEDED)
        return None
    event_id = record_once(engine, c, state, period, episode, summary, now)
    if event_id is None:
        return None  # another run journaled it first and sends it
    labelled = replace(c, period=period)
    # A service's alert goes to its owner too (issue #24).
    targets = [*notifiers, *owner_notifiers(c.service, settings().alerts)]
    channels = dispatch(
        _notification(labelled, state, summary, description, starts_at, ends_at), targets
    )
    set_channels(engine, event_id, channels)
    return Sent(c.rule, c.provider, c.threshold, state, summary, channels, c.service)


def apply_conditions(
    engine: Engine,
    conditions: Sequence[Condition],
    notifiers: Sequence[Notifier],
    now: datetime,
    *,
    zone: tzinfo,
    lang: str | None = None,
) -> list[Sent]:
    """Journal and send the transitions among ``conditions`` (see the module docstring)."""
    sent: list[Sent] = []
    superseded: set[tuple[str, str, str]] = set()
    for c in conditions:
        opened = open_episode(engine, c) if c.period is None or not c.holds else None
        episode = None
        if c.holds and opened is None:
            period = c.period or now.astimezone(zone).strftime("%Y-%m-%dT%H:%M")
            episode = next_episode(engine, c, period)
        if episode is not None:
            result = _send(
                engine,
                c,
                "firing",
                period,
                episode,
                describe(c, "firing", lang),
                notifiers,
                now,
                starts_at=now,
                ends_at=None,
                silent=(c.rule, c.provider, c.service) in superseded,
            )
            # Conditions come highest threshold first (see rules.quota_conditions).
            superseded.add((c.rule, c.provider, c.service))
        elif not c.holds and opened is not None:
            result = _send(
                engine,
                c,
                "resolved",
                opened.period,
                opened.episode,
                describe(c, "resolved", lang),
                notifiers,
                now,
                starts_at=opened.fired_at,
                ends_at=now,
                silent=opened.silent,
            )
        else:
            continue
        if result is not None:
            sent.append(result)
    return sent


def expire_periods(
    engine: Engine,
    notifiers: Sequence[Notifier],
    now: datetime,
    *,
    zone: tzinfo,
    lang: str | None = None,
    of: tuple[str, ...] = rules.CALENDAR_RULES,
) -> list[Sent]:
    """Resolve every open calendar alert (of the rules ``of``) whose day or month ended at or
    before ``now``: one message each, whose ``endsAt`` is the period's end."""
    sent: list[Sent] = []
    for episode in open_episodes(engine, of):
        ended = rules.period_end(episode.rule, episode.period, zone)
        if ended is None or ended > now:
            continue
        result = _resolve_ended(engine, episode, ended, notifiers, now, lang)
        if result is not None:
            sent.append(result)
    return sent


def _resolve_ended(
    engine: Engine,
    episode: OpenEpisode,
    ended: datetime,
    notifiers: Sequence[Notifier],
    now: datetime,
    lang: str | None,
) -> Sent | None:
    text = describe_period_end(episode.summary, episode.rule, episode.period, lang)
    return _resolve(engine, episode, text, notifiers, now, ended)


def _resolve(
    engine: Engine,
    episode: OpenEpisode,
    text: tuple[str, str],
    notifiers: Sequence[Notifier],
    now: datetime,
    ended: datetime,
) -> Sent | None:
    """Journal and send the end of ``episode`` (once), saying ``text``; ``ended``: its ``endsAt``."""
    return _send(
        engine,
        episode.condition(),
        "resolved",
        episode.period,
        episode.episode,
        text,
        notifiers,
        now,
        starts_at=episode.fired_at,
        ends_at=ended,
        silent=episode.silent,
    )


def run_budget_checks(
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    tz: tzinfo | str | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Evaluate the calendar quotas, the monthly cost and each service's budget now; send
    what is news (a service's budget alert to its owner too).

    Nothing is evaluated or sent when Prometheus sends the alerts (``AIPOOL_ALERTS``), but the
    alerts only the pool sends (a missing model) still end with their day.
    """
    engine = engine or default_engine()
    notifiers = notifiers_from_env() if notifiers is None else notifiers
    now = now or datetime.now(UTC)
    zone = tz if isinstance(tz, tzinfo) else pool_zone(tz)
    if not pool_sends_alerts():
        return expire_periods(engine, notifiers, now, zone=zone, lang=lang, of=POOL_ONLY_RULES)
    usage = budget_usage(engine, now, zone)
    today = local_day(now, zone)
    month = today.strftime("%Y-%m")
    quotas = {p: limits.quota for p, limits in settings().limits.items()}
    conditions = [
        *rules.quota_conditions(usage, quotas, today.isoformat(), month),
        *rules.monthly_cost_conditions(usage.month_cost, monthly_budget_usd(), month),
        *_service_conditions(engine, today, zone, month),
    ]
    ended = expire_periods(engine, notifiers, now, zone=zone, lang=lang)
    return ended + apply_conditions(engine, conditions, notifiers, now, zone=zone, lang=lang)


def _service_conditions(engine: Engine, today: date, zone: tzinfo, month: str) -> list[Condition]:

    declared = load_table().services
    conditions = []
    if any(s.shares for s in declared.values()):
        used = service_usage_day(engine, today, zone)
        limits = settings().limits
        uses = {
            key: share_use(service, used.get(key, ServiceUsage(key)), limits)
            for key, service in declared.items()
        }
        names = {key: service.name for key, service in declared.items()}
        conditions += rules.service_share_conditions(uses, names, today.isoformat())
    if any(s.monthly_budget_usd is not None for s in declared.values()):
        costs = service_month_cost(engine, today, zone)
        conditions += rules.service_budget_conditions(costs, declared, month)
    return conditions


#: How a breaker alert's journal ``period`` names the outage it is about: the moment the breaker
#: tripped (CLOSED -> OPEN), in UTC to the microsecond, as the breaker stored it (``tripped_at``).
BREAKER_EPISODE = "%Y-%m-%dT%H:%M:%S.%fZ"


def breaker_episode(tripped_at: float) -> str:
    """The journal's ``period`` of the breaker alert for the outage that began at ``tripped_at``.

    Why the moment the breaker tripped, and not its generation or "whatever episode is open": the
    breaker keeps its state in Redis, which may lose it (a restart without persistence, a
    FLUSHALL). The generation starts over at 0 then, so it would name an earlier outage again; and
    "the open episode" is the one the pool no longer remembers, which silenced the next real
    outage and was resolved by its end. ``tripped_at`` is written once per outage by the script
    that trips the breaker (on Redis's clock, the pool's one time), kept unchanged through the
    half-open trials and reopenings, and handed to every transition of that outage, so each
    message about it, from any process, names the same episode, and no other outage can.
    """
    return datetime.fromtimestamp(tripped_at, UTC).strftime(BREAKER_EPISODE)


def _tripped(period: str) -> datetime | None:
    """When the outage a breaker alert's ``period`` names began; ``None`` for an alert journaled
    before breaker alerts were named by it (their period was the local minute they fired)."""
    try:
        return datetime.strptime(period, BREAKER_EPISODE).replace(tzinfo=UTC)
    except ValueError:
        return None


def _breaker(
    provider: str,
    is_open: bool,
    tripped_at: float | None,
    engine: Engine | None,
    notifiers: Sequence[Notifier] | None,
    now: datetime | None,
    lang: str | None,
    facts: dict[str, object],
) -> list[Sent]:
    try:
        if not pool_sends_alerts():
            return []  # Prometheus alerts on the breaker state (AIPOOL_ALERTS=prometheus)
        engine = engine or default_engine()
        notifiers = notifiers_from_env() if notifiers is None else notifiers
        now = now or datetime.now(UTC)
        condition = rules.breaker_condition(provider, is_open, **facts)
        sent: list[Sent] = []
        # Without tripped_at (a message from a worker of an earlier release, or a breaker state
        # stored before the breaker kept it): one episode at a time, as those releases did.
        if tripped_at is not None:
            condition = replace(condition, period=breaker_episode(tripped_at))
            if is_open:
                before = _outage_began(engine, condition, notifiers, now, lang)
                if before is None:
                    return []
                sent = before
        return sent + apply_conditions(
            engine, [condition], notifiers, now, zone=pool_zone(), lang=lang
        )
    except Exception:
        # Called from the breaker's listener inside a worker: an alerting problem must never
        # fail the call that tripped the breaker.
        log.exception("breaker alert for %s not journaled", provider)
        return []


def _outage_began(
    engine: Engine,
    c: Condition,
    notifiers: Sequence[Notifier],
    now: datetime,
    lang: str | None,
) -> list[Sent] | None:
    """Before the outage ``c.period`` names fires: ``None`` when it must not (it paged already,
    or a later outage of the provider is open and this message is late), else the resolutions
    of the provider's open breaker alerts about other outages, sent now.

    An outage fires at most once, ever: a redelivered message, a reopening after a failed trial
    and a message that arrives after the outage's end all find it journaled. Another outage's
    alert still open means that outage is over (a breaker trips only from CLOSED): its closing
    message is late, or never comes because the breaker lost its state (Redis restarted empty or
    was flushed, so it came back closed without a transition). That alert ends here, with a
    message saying so, and this outage pages on its own. Which of the two is the later is told
    by their ``tripped_at``, both stamped on Redis's clock by the scripts that tripped them.
    """
    assert c.period is not None
    if next_episode(engine, c, c.period) != 1:
        return None
    began = _tripped(c.period)
    assert began is not None
    others = [
        e
        for e in open_episodes(engine, (c.rule,))
        if (e.service, e.provider, e.threshold) == (c.service, c.provider, c.threshold)
        and e.period != c.period
    ]
    if any((at := _tripped(e.period)) is not None and at > began for e in others):
        log.warning("breaker %s: an alert for a later outage is open; %s not sent", c.provider, c)
        return None
    sent = []
    for stale in others:
        result = _resolve(
            engine, stale, describe_forgotten(stale.summary, True, lang), notifiers, now, now
        )
        if result is not None:
            sent.append(result)
    return sent


def reconcile_breaker_alerts(
    client: Any,
    *,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Resolve every breaker alert whose outage its breaker (on ``client``, the pool's Redis) no
    longer holds; never raises. Beat runs it with the budget checks.

    An outage ends with its breaker's closing, which resolves its alert; but a breaker that lost
    its state (Redis restarted empty, or was flushed) comes back closed without a transition, and
    a closing whose message was lost says nothing either. The breaker itself says which: its
    stored ``tripped_at`` is still the alert's outage while that outage goes on (left alone) or
    after it closed (resolved, as its closing would); anything else (none, another outage) means
    the breaker no longer holds this one (resolved, saying so). The journal is read before the
    breaker, so an alert read open was fired for an outage the breaker had already stored.
    Alerts journaled before breaker alerts were named by their outage are left to their closing.
    """
    try:
        if not pool_sends_alerts():
            return []
        engine = engine or default_engine()
        episodes = [
            (e, began)
            for e in open_episodes(engine, ("breaker_open",))
            if (began := _tripped(e.period)) is not None
        ]
        if not episodes:
            return []
        notifiers = notifiers_from_env() if notifiers is None else notifiers
        now = now or datetime.now(UTC)
        sent = []
        for episode, began in episodes:
            state, tripped_at = BreakerStore(client, episode.provider).peek_outage()
            if tripped_at is not None and breaker_episode(tripped_at) == episode.period:
                if state is not BreakerState.CLOSED:
                    continue  # the outage goes on
                text = describe(episode.condition(), "resolved", lang)
            else:
                reopened = (
                    tripped_at is not None and datetime.fromtimestamp(tripped_at, UTC) > began
                )
                text = describe_forgotten(episode.summary, reopened, lang)
            result = _resolve(engine, episode, text, notifiers, now, now)
            if result is not None:
                sent.append(result)
        return sent
    except RedisError as exc:
        log.warning("breaker alerts not reconciled: Redis answered %s", type(exc).__name__)
        return []
    except Exception:
        log.exception("breaker alerts not reconciled with the breakers")
        return []


def _notify_today(
    condition: Callable[[str], Condition],
    what: str,
    provider: str,
    *,
    engine: Engine | None,
    notifiers: Sequence[Notifier] | None,
    now: datetime | None,
    lang: str | None,
) -> list[Sent]:
    """Alert on the condition ``condition(day)`` of the local day ``now`` falls on: once per
    provider and day, resolved when the day ends; never raises (a worker's hop sends it)."""
    try:
        now = now or datetime.now(UTC)
        zone = pool_zone()
        day = local_day(now, zone).isoformat()
        return apply_conditions(
            engine or default_engine(),
            [condition(day)],
            notifiers_from_env() if notifiers is None else notifiers,
            now,
            zone=zone,
            lang=lang,
        )
    except Exception:
        # Sent from a worker's hop: an alerting problem must never fail a request.
        log.exception("%s alert for %s not journaled", what, provider)
        return []


def notify_model_missing(
    provider: str,
    model: str,
    *,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Alert (critical) that ``provider`` does not have ``model``; once per provider and local
    day, resolved when the day ends; never raises. Sent by the pool whatever ``AIPOOL_ALERTS``
    says: the failures' metric (``ai_requests_failed_total{code="model_missing"}``) carries no
    model, so no Prometheus rule could name it, and none sends this alert."""
    return _notify_today(
        lambda day: rules.model_missing_condition(provider, model, day),
        "model-missing",
        provider,
        engine=engine,
        notifiers=notifiers,
        now=now,
        lang=lang,
    )


def notify_provider_not_found(
    provider: str,
    host: str,
    *,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Alert (critical) that ``provider``'s base URL, on ``host``, does not serve its API (a 404
    naming no model, or a 405); once per provider and local day, resolved when the day ends;
    never raises. The message names the provider, ``host`` (never the URL's path or query, which
    may hold a key) and the setting to check. Sent by the pool whatever ``AIPOOL_ALERTS`` says,
    as a missing model is: the failures' metric (``ai_requests_failed_total{code="not_found"}``)
    carries no host, and a failure or two a day at low traffic never opens the breaker that
    pages for the rest."""
    return _notify_today(
        lambda day: rules.not_found_condition(provider, host, day),
        "URL-not-found",
        provider,
        engine=engine,
        notifiers=notifiers,
        now=now,
        lang=lang,
    )


def notify_breaker_opened(
    provider: str,
    *,
    failures: int | None = None,
    tripped_at: float | None = None,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Alert (critical) that ``provider``'s breaker opened; once per outage, never raises.

    ``tripped_at`` names the outage (:func:`breaker_episode`): a call about an outage that was
    alerted already (a reopening, a redelivered message) sends nothing, one about a new outage
    ends the alert of an outage the breaker lost (Redis restarted empty) and fires. Without it
    (a message from an earlier release), a call while any opening is unresolved sends nothing.
    """
    facts: dict[str, object] = {"failures": failures} if failures else {}
    return _breaker(provider, True, tripped_at, engine, notifiers, now, lang, facts)


def notify_breaker_closed(
    provider: str,
    *,
    tripped_at: float | None = None,
    engine: Engine | None = None,
    notifiers: Sequence[Notifier] | None = None,
    now: datetime | None = None,
    lang: str | None = None,
) -> list[Sent]:
    """Report once that ``provider``'s open breaker closed again; never raises.

    ``tripped_at`` names the outage that ended: only its alert is resolved (a late message never
    ends a later outage's). Without it, the provider's latest unresolved opening is.
    """
    return _breaker(provider, False, tripped_at, engine, notifiers, now, lang, {})
