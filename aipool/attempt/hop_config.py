"""What every attempt op reads and no request changes, kept in Redis once per version.

A provider's breaker and quota settings and the prefixes of its guard keys, the money rules and
each declared service's budget and shares, how long records and answers are kept: the same for
every request until the route table or the settings change. They are written once, into a hash
named by the digest of their encoding (``aipool:hopcfg:<digest>``), and ``attempt.lua`` is told
that name and the attempt's own values only (journey, chain, position, periods, the request's
costs and skips): issue #44's "scripts that carry little".

A new route table or new settings encode differently, so they get a new digest and a new hash;
the old one is no longer named by this process and expires (:data:`CONFIG_KEEP_S`). A script that
finds its hash gone (Redis restarted empty, ``FLUSHDB``, eviction, that expiry) answers
``config`` and changes nothing; :class:`~aipool.attempt.lifecycle.AttemptBook` then writes the hash
and asks once more.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aipool.attempt.layout import ATTEMPT_PREFIX, LEASES_KEY, SPEND_PREFIX, periods_arg
from aipool.attempt.money import MoneyRules, service_fields
from aipool.breaker import Breaker
from aipool.ledger.usage_log import PENDING_KEY
from aipool.periods import Period, day_of, month_of
from aipool.providers.catalog import TERMINALS
from aipool.quota import Quota
from aipool.quota.storage import DAY_KEEP, MONTH_KEEP
from aipool.routing.table import RouteTable

CONFIG_PREFIX = "aipool:hopcfg:"
#: How long a version is kept after it was written. A version still in use that expires is
#: written again by the next op that misses it (one round trip more, once); a version no process
#: names any more (an older route table) goes by itself.
CONFIG_KEEP_S = 7 * 86_400


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class StoredConfig:
    """One version of the configuration: the hash's name (its digest) and its fields."""

    key: str
    fields: Mapping[str, str]

    def load(self, client: Any) -> None:
        """Write the hash (all fields in one step) and its expiry."""
        pipe = client.pipeline(transaction=True)
        pipe.hset(self.key, mapping=dict(self.fields))
        pipe.expire(self.key, CONFIG_KEEP_S)
        pipe.execute()


def provider_fields(breakers: Mapping[str, Breaker], quotas: Mapping[str, Quota]) -> dict[str, Any]:
    """``p:<provider>``: a provider's breaker settings (``b``: recovery_timeout,
    half_open_max_calls, trial_timeout, failure_threshold), whether its quota counts (``lim``),
    its limits (``q``: rpm, daily_requests, daily_tokens, monthly_tokens; -1 unlimited) and its
    guard keys (``k``: breaker state, breaker trials, quota window, and the prefixes of the quota
    day's and month's keys, to which the script adds the period's label)."""
    fields: dict[str, Any] = {}
    for provider, quota in quotas.items():
        if provider in TERMINALS or provider not in breakers:
            continue
        breaker = breakers[provider].store
        fields[f"p:{provider}"] = {
            "b": breakers[provider].setting_values(),
            "lim": 0 if quota.limits.unlimited else 1,
            "q": quota.limit_values(),
            "k": [
                breaker.state_key,
                breaker.trials_key,
                quota.store.window_key,
                quota.store.day_key(""),
                quota.store.month_key(""),
            ],
        }
    return fields


class HopConfigs:
    """The stored configuration for the route table in use, and the periods an op is told.

    Built once per route table object (``load_table`` hands back the same object until the file
    changes) from the book's breakers, quotas, money rules and keeps, which do not change.
    """

    def __init__(
        self,
        breakers: Mapping[str, Breaker],
        quotas: Mapping[str, Quota],
        money: MoneyRules,
        keeps: tuple[int, int, float],
    ) -> None:
        self.quotas = quotas
        self._fixed = {
            **provider_fields(breakers, quotas),
            # What every op reads, in one field: one decode in the script.
            "pool": {
                # record_keep, answer_keep, lease grace; days' and months' counters kept past
                # their end
                "keep": [*keeps, DAY_KEEP, MONTH_KEEP],
                "keys": {
                    "attempt": ATTEMPT_PREFIX,
                    "leases": LEASES_KEY,
                    "pending": PENDING_KEY,
                    "spend": SPEND_PREFIX,
                },
                "terminals": sorted(TERMINALS),
                "money": money.amounts(),
            },
        }
        self._table: RouteTable | None = None
        self._stored: StoredConfig | None = None
        self._periods: tuple[Period, Period, str] | None = None
        #: How many times this process wrote a version (the model test counts the reloads).
        self.loads = 0

    def current(self, table: RouteTable) -> StoredConfig:
        """The version for ``table`` and the book's settings."""
        stored = self._stored
        if stored is not None and table is self._table:
            return stored
        fields = {**self._fixed, **service_fields(table, self.quotas)}
        digest = hashlib.blake2b(_json(fields).encode(), digest_size=16).hexdigest()
        stored = StoredConfig(
            f"{CONFIG_PREFIX}{digest}", {name: _json(value) for name, value in fields.items()}
        )
        self._table, self._stored = table, stored
        return stored

    def load(self, client: Any, stored: StoredConfig) -> None:
        """Write ``stored`` into Redis (the script found it missing)."""
        stored.load(client)
        self.loads += 1

    def periods(self, now: float, provider: str) -> tuple[Period, Period, str]:
        """The day and month holding ``now``, and the argument that names them."""
        cached = self._periods
        if cached is not None and cached[0].start <= now < cached[0].end:
            return cached
        tz = self.quotas[provider].tz
        day, month = day_of(now, tz), month_of(now, tz)
        self._periods = (day, month, periods_arg(day, month))
        return self._periods
