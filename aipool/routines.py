"""Beat's routines (the ledger's drain, the attempts' sweep...) timed on the pool's clock.

Beat used to send them with Celery's ``expires``: an instant on beat's clock that the worker
compares with its own. A maintenance worker 90 s ahead discarded every sweep (``expires=60``) and
drain; a beat 10 s behind sent every drain (``expires=5``) already expired, and the ledger was not
drained (issue #42). Now beat stamps each run with Redis's ``TIME`` when it sends it
(:func:`stamp`), and the worker asks Redis, in one script, whether to run it (:func:`may_run`):

- a run goes ahead unless a run beat sent later already began (two workers, a redelivery), or
  it is older than its routine's bound on Redis's clock (a backlog left while the maintenance
  worker was away: the next tick's run does the work);
- a run nobody stamped (sent by hand, or by a beat of an earlier release) always goes ahead;
- a discarded run is made up at the next tick, since no expiry depends on a host's clock.

Each run that goes ahead records when it began, on Redis's clock, for
``aipool_routine_last_run_age_seconds`` (:mod:`aipool.metrics.routines`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aipool.redis.lua import LuaScripts, text

#: The message header beat's stamp travels in: ``{"sent": <Redis time>, "stale_after": <s>}``.
HEADER = "aipool_routine"
#: The set of routines that ran at least once (their hashes are ``routine_key(name)``).
ROUTINES_KEY = "aipool:routines"

_SCRIPTS = LuaScripts("aipool", "routines")


def routine_key(name: str) -> str:
    """The hash of routine ``name``: ``sent`` (latest run begun) and ``ran`` (when it began)."""
    return f"aipool:routine:{name}"


def redis_now(client: Any) -> float:
    """Redis's ``TIME`` in epoch seconds."""
    seconds, micros = client.time()
    return float(seconds) + float(micros) / 1_000_000


def stamp(client: Any, stale_after_s: float | None) -> dict[str, Any]:
    """The header value of a run sent now: Redis's time and the routine's bound."""
    return {"sent": redis_now(client), "stale_after": stale_after_s}


def may_run(client: Any, name: str, stamped: Mapping[str, Any] | None) -> tuple[bool, str]:
    """Whether the run of routine ``name`` carrying ``stamped`` (its :data:`HEADER`, or None)
    goes ahead, and why not: ``superseded`` or ``stale``. Records the run when it does."""
    sent = stale = ""
    if isinstance(stamped, Mapping) and isinstance(stamped.get("sent"), int | float):
        sent = repr(float(stamped["sent"]))
        bound = stamped.get("stale_after")
        if isinstance(bound, int | float) and bound > 0:
            stale = repr(float(bound))
    script = _SCRIPTS.for_client(client)["routines"]
    go, why = script(keys=[routine_key(name), ROUTINES_KEY], args=[name, sent, stale])
    return bool(int(go)), text(why)
