"""Replica acknowledgement: a write that decides a paid call, held by a replica before the call.

Redis replicates asynchronously. A master that dies may have acknowledged writes its replica
never received, and a Sentinel failover then promotes a replica without them
(``docs/attempts.md``, A failover): a lost ``begin`` lets a redelivered message call the provider
a second time; a lost ``finish`` leaves the call's answer, and its real tokens, unknown to the
pool. Redis's ``WAIT numreplicas timeout`` blocks the connection that wrote until that many
replicas acknowledged everything it wrote, or the timeout passed, and answers how many did.

:func:`run_acknowledged` runs one script and its ``WAIT`` in one pipeline: the same connection
(``WAIT`` counts only that connection's writes; another connection of the pool could answer for
nothing) and no round trip more than the script's own. A script Redis lacks (``NOSCRIPT``: a
restart, or a new master, to which Redis 7 never replicates scripts) is loaded and the pair run
again: the script did not run, so its write happens once.

Settings (:class:`ReplicaAcks`, off by default): ``AIPOOL_REDIS_REPLICA_ACKS`` replicas (0: no
``WAIT`` at all), within ``AIPOOL_REDIS_REPLICA_ACK_TIMEOUT`` seconds (0.1). When fewer
acknowledge in time the write still stands on the master, and the shortfall is counted
(``aipool_replica_ack_shortfalls_total``); the pool then goes on, and says so once a minute in
the log (the default: a replica that is down or far behind must not stop paid calls, and the
exposure is the failover that would have to follow), or, with
``AIPOOL_REDIS_REPLICA_ACK_REQUIRED=1`` and a write the call has yet to follow (``begin``),
raises :class:`~aipool.errors.ReplicasBehind` so that no paid call is made on a record only the
master holds. :class:`~aipool.attempt.lifecycle.AttemptBook` calls it for the ``begin`` and
``finish`` of every paid hop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.commands.core import Script
from redis.exceptions import NoScriptError

from aipool.errors import ReplicasBehind
from aipool.metrics.replicas import count_shortfall
from aipool.redis.lua import evalsha_in
from aipool.settings import settings

log = logging.getLogger("aipool.redis")

#: How often, at most, the log says that replicas fell behind (seconds).
SAY_EVERY_S = 60.0


@dataclass(frozen=True)
class ReplicaAcks:
    """How many replicas must hold a deciding write, how long to wait for them, and whether a
    shortfall stops the paid call."""

    replicas: int = 0
    timeout_s: float = 0.1
    required: bool = False

    @classmethod
    def from_settings(cls) -> ReplicaAcks:
        """The policy the settings name (``AIPOOL_REDIS_REPLICA_ACK*``)."""
        s = settings()
        return cls(
            s.redis_replica_acks, s.redis_replica_ack_timeout_s, s.redis_replica_ack_required
        )

    @property
    def on(self) -> bool:
        """Whether writes wait for replicas at all."""
        return self.replicas > 0

    @property
    def timeout_ms(self) -> int:
        """``WAIT``'s timeout: whole milliseconds, at least one (0 would wait for ever)."""
        return max(1, round(self.timeout_s * 1000))


@dataclass(frozen=True)
class Acknowledged:
    """What ``WAIT`` answered: how many replicas hold the write, of how many asked."""

    replicas: int
    asked: int

    @property
    def enough(self) -> bool:
        """Every replica asked for holds the write (always, when none was asked for)."""
        return self.replicas >= self.asked


_last_said = 0.0


def run_acknowledged(
    client: Any,
    script: Script,
    keys: Sequence[Any],
    args: Sequence[Any],
    acks: ReplicaAcks,
    *,
    provider: str = "",
    op: str = "",
    stops: bool = True,
    wrote: Callable[[Any], bool] = lambda _: True,
) -> tuple[Any, Acknowledged]:
    """Run ``script`` and, when ``acks`` is on, wait in the same round trip until
    ``acks.replicas`` replicas hold what it wrote. Returns the script's reply and how many did.

    A shortfall is counted (``aipool_replica_ack_shortfalls_total{provider, op}``). Raises
    :class:`~aipool.errors.ReplicasBehind`, the script's reply in it, when fewer did,
    ``acks.required`` and the write ``stops`` what follows (a ``begin``: the call is not yet
    made; a ``finish`` stops nothing, the call was made); the script's writes stand on the master
    either way (``WAIT`` undoes nothing). A reply that ``wrote`` says changed nothing (the attempt
    script's missing configuration) decides nothing either: it is neither counted nor raised."""
    if not acks.on:
        return script(keys=list(keys), args=list(args)), Acknowledged(0, 0)

    def run() -> list[Any]:
        pipe = client.pipeline(transaction=False)
        evalsha_in(pipe, script, list(keys), list(args))
        pipe.wait(acks.replicas, acks.timeout_ms)
        replies: list[Any] = pipe.execute()
        return replies

    try:
        reply, replicas = run()
    except NoScriptError:
        client.script_load(script.script)  # type: ignore[attr-defined]  # its source; unstubbed
        reply, replicas = run()
    acknowledged = Acknowledged(int(replicas), acks.replicas)
    if not acknowledged.enough and wrote(reply):
        count_shortfall(provider, op)
        _fell_behind(acknowledged, acks, reply, stops)
    return reply, acknowledged


def _fell_behind(acknowledged: Acknowledged, acks: ReplicaAcks, reply: Any, stops: bool) -> None:
    what = (
        f"{acknowledged.replicas} of {acks.replicas} replicas acknowledged a write that decides "
        f"a paid call within {acks.timeout_s:g} s (AIPOOL_REDIS_REPLICA_ACKS, "
        "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT)"
    )
    if acks.required and stops:
        raise ReplicasBehind(f"{what}: no call is made on a record only the master holds", reply)
    global _last_said
    now = time.monotonic()
    if now - _last_said >= SAY_EVERY_S:
        _last_said = now
        log.warning("%s; going on: a failover now could lose that write", what)
