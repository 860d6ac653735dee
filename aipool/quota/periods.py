"""Calendar days and months in the pool's time zone, as Redis key suffixes and boundaries.

ADR-006's daily and monthly quotas are calendar periods where the operators live
(``AIPOOL_TIMEZONE``, default ``Asia/Taipei``), not rolling 24 hours: a quota spent at 23:59 local
has room again at 00:00 local.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from aipool import config


def pool_timezone() -> ZoneInfo:
    """The zone named by ``AIPOOL_TIMEZONE``, or Asia/Taipei (:func:`aipool.config.timezone`)."""
    return config.timezone()


@dataclass(frozen=True)
class Period:
    """One calendar period: ``label`` is what keys carry (``2026-11-29`` or ``2026-11``)."""

    label: str
    start: float
    end: float


def _midnight(day: date, tz: ZoneInfo) -> float:
    return datetime.combine(day, time(0), tzinfo=tz).timestamp()


def day_of(at: float, tz: ZoneInfo) -> Period:
    """The local calendar day holding the instant ``at`` (epoch seconds)."""
    today = datetime.fromtimestamp(at, tz).date()
    return Period(today.isoformat(), _midnight(today, tz), _midnight(today + timedelta(days=1), tz))


def month_of(at: float, tz: ZoneInfo) -> Period:
    """The local calendar month holding the instant ``at`` (epoch seconds)."""
    first = datetime.fromtimestamp(at, tz).date().replace(day=1)
    following = (first + timedelta(days=32)).replace(day=1)
    return Period(first.strftime("%Y-%m"), _midnight(first, tz), _midnight(following, tz))
