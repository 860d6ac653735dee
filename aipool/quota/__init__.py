"""Quotas shared by every worker of the pool, one per provider, kept in Redis.

Use::

    quota = quotas_for(redis_client)["gemini"]
    res = quota.reserve(request_id, attempt, estimated_tokens)   # QuotaExceeded when no room
    try:
        answer = call()
    except ProviderError:
        quota.release(res)                 # the call was made: its tokens come back
        raise
    quota.settle(res, answer.usage.total)  # charge the real usage

A reservation whose call never happens goes back whole: ``quota.release(res, called=False)``.
The pool's workers do all of this inside one attempt's script (:mod:`aipool.attempt`), which also
makes sure a call happens once; these methods run the same Lua alone.
"""

from aipool.periods import day_of, month_of
from aipool.quota.quota import Quota, quotas_for
from aipool.quota.reservation import Reservation

__all__ = [
    "Quota",
    "Reservation",
    "day_of",
    "month_of",
    "quotas_for",
]
