"""The five start tiers' names, ADR-006's words for where a request starts.

Their meaning and how a request is given one live in :mod:`aipool.routing.tiers`; the names live
here, below the route table, so that the table can check a rule's ``tier`` without importing the
module that reads the table.
"""

from __future__ import annotations

TIERS = ("local-small", "local-code", "cloud", "tools", "critical")
LOCAL_TIERS = frozenset({"local-small", "local-code"})
CLOUD_TIERS = frozenset({"cloud", "critical"})
