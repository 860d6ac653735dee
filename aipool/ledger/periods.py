"""Compatibility: calendar periods moved to :mod:`aipool.periods`, with one time-zone function,
:func:`~aipool.periods.pool_zone` (``local_zone`` here). Kept while ``tasks/maintenance.py``,
``aipool/cli/report.py``, ``aipool/cli/status.py`` and ``bench/bench_rollup.py`` import it."""

from aipool.periods import (
    day_range,
    local_day,
    month_range,
    month_start,
    next_month,
    previous_month,
)
from aipool.periods import pool_zone as local_zone

__all__ = [
    "day_range",
    "local_day",
    "local_zone",
    "month_range",
    "month_start",
    "next_month",
    "previous_month",
]
