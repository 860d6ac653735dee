"""Calendar periods in the operator's time zone, and the UTC ranges that select their rows.

A "day" is a calendar day in ``AIPOOL_TIMEZONE`` (default Asia/Taipei), not a UTC day: quotas,
roll-ups and alerts all agree on when a day starts. Queries select a period by the half-open UTC
range ``[start, end)`` so the index on ``created_at`` does the work.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo

from aipool import config


def local_zone(name: str | None = None) -> ZoneInfo:
    """The zone named ``name``, else ``AIPOOL_TIMEZONE``, else Asia/Taipei (:func:`aipool.config.timezone`)."""
    return config.timezone(name)


def _zone(tz: tzinfo | str | None) -> tzinfo:
    return tz if isinstance(tz, tzinfo) else local_zone(tz)


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
