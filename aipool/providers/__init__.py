"""Model providers: one adapter module each, one :class:`~aipool.providers.base.Provider` interface.

Which providers exist, and which adapter serves each, is :mod:`aipool.providers.catalog`'s.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

from aipool.providers.catalog import CATALOG, TERMINALS

if TYPE_CHECKING:
    from aipool.providers.base import Provider


@cache
def get_provider(name: str) -> Provider:
    """The process-wide adapter for ``name``, built once and reused (SDK clients are costly)."""
    if name in TERMINALS:
        # deferred: loads pydantic-settings (~351 ms of start-up) only when this runs
        from aipool.providers.static import StaticProvider

        return StaticProvider(refuse=name == "refuse")
    facts = CATALOG.get(name)
    if facts is None:
        raise KeyError(f"unknown provider {name!r}")
    # Imported on first use, so a worker serving one queue never loads the other SDKs.
    module, _, cls = facts.adapter.partition(":")
    provider: Provider = getattr(importlib.import_module(module), cls)()
    return provider


__all__ = ["get_provider"]
