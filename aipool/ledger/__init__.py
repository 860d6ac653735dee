"""The usage ledger: every attempt at a provider, stored once, rolled up per day and month.

Workers call ``UsageLog(redis).record(UsageRecord(...))``; a beat task calls ``drain()``; roll-ups,
budget alerts and reports read the tables defined in ``aipool.ledger.models``; every figure a decision
reads is ``aipool.ledger.spend`` (spend so far).
"""

from aipool.ledger.db import database_url, make_engine, migrate
from aipool.ledger.record import UsageRecord
from aipool.ledger.rollup import Aggregate, aggregate, rollup, rollup_day, rollup_month
from aipool.ledger.spend import PeriodSpend, Spend, month_spend, spend
from aipool.ledger.totals import restore_quotas, totals
from aipool.ledger.usage_log import DrainResult, UsageLog, drain

__all__ = [
    "Aggregate",
    "DrainResult",
    "PeriodSpend",
    "Spend",
    "UsageLog",
    "UsageRecord",
    "aggregate",
    "database_url",
    "drain",
    "make_engine",
    "migrate",
    "month_spend",
    "restore_quotas",
    "rollup",
    "rollup_day",
    "rollup_month",
    "spend",
    "totals",
]
