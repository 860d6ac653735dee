"""A hop's time limits and its provider's timeout: one owner, the pool's settings.

Every hop of ``ai.generate`` runs under the pool's soft and hard limits
(``AIPOOL_TASK_SOFT_TIME_LIMIT``, ``AIPOOL_TASK_TIME_LIMIT``), never a producer's (``tasks/generate.py``).
A hop makes at most one provider call, bounded by that provider's timeout
(``AIPOOL_TIMEOUT_<PROVIDER>``); around it the hop asks Redis before the call (``begin``) and
records its outcome after (``finish``) and stores the result. A timeout that does not leave
:data:`MARGIN_S` of the soft limit for that lets the soft limit fire inside the call: the pool's
own limit then cuts a healthy provider short (issue #42). Such settings are refused at start, one
line per provider.

Without a soft limit (``unlimited``) nothing is checked: the operator chose the hard limit as the
only one, and a call it kills is booked at its estimate and answered ``time_limit``.
"""

from __future__ import annotations

from aipool.settings.model import Settings
from aipool.settings.names import NAME_OF

#: What a hop needs of its soft limit besides its call: ``begin`` before it, ``finish`` and the
#: result's write after it, each a round trip to Redis (milliseconds on a healthy one).
MARGIN_S = 2.0


def time_limit_problems(current: Settings) -> list[str]:
    """One line per provider whose timeout does not fit under the soft limit with the margin."""
    soft = current.task_soft_time_limit_s
    if soft is None:
        return []
    problems = []
    for provider, configured in current.providers.items():
        if configured.timeout_s + MARGIN_S <= soft:
            continue
        variable = NAME_OF[("providers", provider, "timeout_s")]
        problems.append(
            f"{variable}={configured.timeout_s:g}: does not fit under "
            f"AIPOOL_TASK_SOFT_TIME_LIMIT={soft} with the {MARGIN_S:g} s a hop needs around its "
            f"call (at most {soft - MARGIN_S:g} s): the soft limit would cut {provider}'s calls "
            "short; shorten the timeout or raise the limits"
        )
    return problems
