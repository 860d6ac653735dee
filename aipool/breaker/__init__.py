"""Circuit breakers shared by every worker of the pool, one per provider, kept in Redis.

Use::

    breaker = breakers_for(redis_client)["gemini"]
    permit = breaker.acquire()            # CircuitOpen when refused
    try:
        answer = call()
    except ProviderError as exc:
        if exc.counts_against_provider:
            breaker.record_failure(permit)
        else:
            breaker.release(permit)
        raise
    breaker.record_success(permit)
"""

from aipool.breaker.breaker import DEFAULT_TRIAL_TIMEOUT, Breaker, breakers_for
from aipool.breaker.listeners import Listener, log_transition
from aipool.breaker.state import BreakerState, BreakerTransition, Permit

__all__ = [
    "DEFAULT_TRIAL_TIMEOUT",
    "Breaker",
    "BreakerState",
    "BreakerTransition",
    "Listener",
    "Permit",
    "breakers_for",
    "log_transition",
]
