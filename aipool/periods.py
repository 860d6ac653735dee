"""Calendar days and months in the pool's time zone: the one zone, and the periods in it.

ADR-006's daily and monthly quotas are calendar periods where the operators live
(``AIPOOL_TIMEZONE``, default ``Asia/Taipei``), not rolling 24 hours or UTC days: quotas, roll-ups
and alerts all ask :func:`pool_zone`, so they agree on when a day starts (a quota spent at 23:59
local has room again at 00:00 local). Quotas key Redis counters by :class:`Period` labels; the
ledger selects a period's rows by its half-open UTC range ``[start, end)``, so the index on
``created_at`` does the work.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo


def pool_zone(name: str | None = None) -> ZoneInfo:
    """The zone named ``name``, else the pool's (``AIPOOL_TIMEZONE``, default Asia/Taipei)."""
    if name:
        return ZoneInfo(name)
    # deferred: loads pydantic-settings (~303 ms of start-up) only when this runs
    from aipool.settings import settings

    return settings().zone


def _zone(tz: tzinfo | str | None) -> tzinfo:
    return tz if isinstance(tz, tzinfo) else pool_zone(tz)


# -- dates: what the ledger and reports select by -----------------------------------------------


def local_day(moment: datetime, tz: tzinfo | str | None = None) -> date:
    """The calendar day ``moment`` (timezone-aware) falls on in ``tz``."""
    return moment.astimezone(_zone(tz)).date()


def month_start(day: date) -> date:
    """The first day of ``day``'s month."""
    return day.replace(day=1)


def next_month(month: date) -> date:
    """The first day of the month after ``month``'s."""
    first = month.replace(day=1)
    return (first + timedelta(days=32)).replace(day=1)


def previous_month(month: date) -> date:
    """The first day of the month before ``month``'s."""
    return (month.replace(day=1) - timedelta(days=1)).replace(day=1)


def _midnight_utc(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def day_range(day: date, tz: tzinfo | str | None = None) -> tuple[datetime, datetime]:
    """UTC ``[start, end)`` of the local calendar ``day`` (handles zones with DST)."""
    zone = _zone(tz)
    return _midnight_utc(day, zone), _midnight_utc(day + timedelta(days=1), zone)


def month_range(month: date, tz: tzinfo | str | None = None) -> tuple[datetime, datetime]:
    """UTC ``[start, end)`` of the local calendar month containing ``month``."""
    zone = _zone(tz)
    return _midnight_utc(month_start(month), zone), _midnight_utc(next_month(month), zone)


# -- instants: what quotas key their counters by ------------------------------------------------


@dataclass(frozen=True)
class Period:
    """One calendar period: ``label`` is what keys carry (``2026-11-29`` or ``2026-11``);
    ``start`` and ``end`` are epoch seconds."""

    label: str
    start: float
    end: float


def _midnight(day: date, tz: tzinfo) -> float:
    return datetime.combine(day, time(0), tzinfo=tz).timestamp()


def day_of(at: float, tz: tzinfo) -> Period:
    """The local calendar day holding the instant ``at`` (epoch seconds)."""
    today = datetime.fromtimestamp(at, tz).date()
    return Period(today.isoformat(), _midnight(today, tz), _midnight(today + timedelta(days=1), tz))


def month_of(at: float, tz: tzinfo) -> Period:
    """The local calendar month holding the instant ``at`` (epoch seconds)."""
    first = datetime.fromtimestamp(at, tz).date().replace(day=1)
    return Period(first.strftime("%Y-%m"), _midnight(first, tz), _midnight(next_month(first), tz))
