"""Breaker settings and quotas per provider, as data.

Defaults are ADR-006's numbers. An operator overrides them with a TOML file named by
``AIPOOL_LIMITS_FILE`` or with single environment variables, e.g. ``AIPOOL_GEMINI_RPM=20`` or
``AIPOOL_CLAUDE_FAILURE_THRESHOLD=3``. ``None`` (or ``0`` / ``"unlimited"`` in overrides) means no limit.

Example file::

    [gemini]
    rpm = 10
    daily_requests = 500
    daily_tokens = 100_000
    monthly_tokens = 2_000_000
    failure_threshold = 5
    recovery_timeout = 60
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields, replace
from functools import cache
from typing import Any

from aipool.chains import PROVIDERS


@dataclass(frozen=True)
class BreakerSettings:
    """When a provider's breaker opens and how it probes recovery (ADR-006 §2)."""

    failure_threshold: int = 5
    recovery_timeout: float = 60.0
    half_open_max_calls: int = 3


@dataclass(frozen=True)
class QuotaLimits:
    """How much a provider may be used (ADR-006 §3, §7); ``None`` means unlimited."""

    rpm: int | None = None
    daily_requests: int | None = None
    daily_tokens: int | None = None
    monthly_tokens: int | None = None

    @property
    def unlimited(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


@dataclass(frozen=True)
class ProviderLimits:
    breaker: BreakerSettings
    quota: QuotaLimits


DEFAULTS: dict[str, ProviderLimits] = {
    "ollama": ProviderLimits(BreakerSettings(3, 30.0, 3), QuotaLimits()),
    "gemini": ProviderLimits(BreakerSettings(5, 60.0, 3), QuotaLimits(10, 500, 100_000, 2_000_000)),
    "claude": ProviderLimits(BreakerSettings(5, 60.0, 3), QuotaLimits(5, 200, 50_000, 500_000)),
    # NVIDIA's free tier is metered per key; the site sets its numbers (ADR-006 §8).
    "nemotron": ProviderLimits(BreakerSettings(5, 60.0, 3), QuotaLimits()),
}


def _coerce(value: Any, kind: type) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower().replace("_", "")
        if text in ("", "none", "unlimited", "0"):
            return None if kind is int else kind(0)
        return kind(text)
    if kind is int and value == 0:
        return None
    return kind(value)


def _apply(current: Any, overrides: dict[str, Any]) -> Any:
    changes = {}
    for f in fields(current):
        if f.name in overrides:
            kind = float if f.name == "recovery_timeout" else int
            changes[f.name] = _coerce(overrides[f.name], kind)
    return replace(current, **changes)


def _overrides_for(provider: str, file_data: dict[str, Any]) -> dict[str, Any]:
    merged = dict(file_data.get(provider, {}))
    prefix = f"AIPOOL_{provider.upper()}_"
    for key, value in os.environ.items():
        if key.startswith(prefix):
            merged[key[len(prefix) :].lower()] = value
    return merged


@cache
def load_limits() -> dict[str, ProviderLimits]:
    """Limits for every provider: defaults, then the TOML file, then environment variables."""
    file_data: dict[str, Any] = {}
    path = os.environ.get("AIPOOL_LIMITS_FILE")
    if path:
        with open(path, "rb") as fh:
            file_data = tomllib.load(fh)
    result = {}
    for provider in PROVIDERS:
        base = DEFAULTS[provider]
        overrides = _overrides_for(provider, file_data)
        result[provider] = ProviderLimits(
            breaker=_apply(base.breaker, overrides), quota=_apply(base.quota, overrides)
        )
    return result
