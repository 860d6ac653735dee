"""How much of a request's deadline one hop's call may use, and the latencies that decide it.

A request with a deadline wants the best answer inside it; the chain exists so that a hanging
first provider does not decide the outcome (ADR-006). So a hop's call may use only its *share*
of what is left of the deadline while later providers remain:

- what is left, less the next provider's recent median latency, less :data:`MARGIN_S` (the
  forward to the next queue and its ``begin``), once the pool has seen that provider answer at
  least :data:`MIN_SAMPLES` times;
- otherwise an even split of what is left between this hop and the providers after it;
- never less than :data:`FLOOR_S` (a call shorter than that answers nothing), and never more than
  what is left while that is more than the floor; the last provider gets all of it.

What is left is the worker's estimate, on its own clock corrected by Redis's replies; a host clock
that stepped since Redis last told it the time can make it short, down to nothing. So a share is
never below the floor even then: ``begin`` cuts every call at the deadline on Redis's clock, and
makes none once it has passed, so a share never lets a call run past the deadline, and the
estimate alone never begins (and charges) a call with no time to answer.

Latencies are kept per provider in Redis (``aipool:latency:<provider>``, the last
:data:`SAMPLES` answers' call times in seconds, nothing else: no prompt, no request id), so every
worker shares them. They are advice: a Redis that does not answer leaves the even split.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from redis.exceptions import RedisError

log = logging.getLogger("aipool.hop")

#: How many recent answers of a provider its median is taken over.
SAMPLES = 20
#: Below this many samples the median says too little: the remainder is split evenly instead.
MIN_SAMPLES = 3
#: Left beside the next provider's median for the hop between them (forward, queue, ``begin``).
MARGIN_S = 0.3
#: The shortest share a call is cut to while any of the deadline is left: shorter, even a
#: healthy local model would answer nothing, and the share would only move the failure along.
FLOOR_S = 0.5
#: A provider unused for this long has its samples forgotten (they describe another day's load).
KEEP_S = 86_400
#: A process keeps at most one sample per provider this often: under load, answers a few
#: milliseconds apart tell the median nothing new, and each sample is a round trip to Redis.
SAMPLE_EVERY_S = 0.2
#: When this process last kept a sample, per provider (monotonic seconds).
_last_sample: dict[str, float] = {}

Median = Callable[[str], float | None]


def latency_key(provider: str) -> str:
    """The Redis list of ``provider``'s recent call latencies (seconds, newest first)."""
    return f"aipool:latency:{provider}"


def record_latency(
    client: Any, provider: str, seconds: float, every_s: float = SAMPLE_EVERY_S
) -> None:
    """Keep one answered call's latency, unless this process kept one of ``provider``'s less
    than ``every_s`` ago; a Redis that does not answer keeps nothing."""
    now = time.monotonic()
    if now - _last_sample.get(provider, -every_s) < every_s:
        return
    _last_sample[provider] = now
    key = latency_key(provider)
    try:
        pipe = client.pipeline(transaction=False)
        pipe.lpush(key, f"{max(0.0, seconds):.4f}")
        pipe.ltrim(key, 0, SAMPLES - 1)
        pipe.expire(key, KEEP_S)
        pipe.execute()
    except RedisError:
        log.debug("latency of %s not recorded", provider, exc_info=True)


def recent_median(client: Any, provider: str) -> float | None:
    """``provider``'s median latency over its recent answers, or None below :data:`MIN_SAMPLES`
    (or when Redis does not answer)."""
    try:
        raw = client.lrange(latency_key(provider), 0, SAMPLES - 1)
    except RedisError:
        return None
    samples = [float(s) for s in raw]
    if len(samples) < MIN_SAMPLES:
        return None
    return statistics.median(samples)


def share(left_s: float, later: Sequence[str], median: Median) -> float:
    """How long this hop's call may take of the ``left_s`` seconds the deadline leaves, with the
    providers ``later`` (in chain order) still to try after it."""
    left_s = max(0.0, left_s)
    if not later:
        return max(FLOOR_S, left_s)
    known = median(later[0])
    # Unknown: an even split between this hop and the later ones.
    wanted = left_s / (len(later) + 1) if known is None else left_s - known - MARGIN_S
    return max(FLOOR_S, min(left_s, wanted))
